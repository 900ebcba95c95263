#!/usr/bin/env bash
# A release of the collection, as collections release: the changelog (CHANGELOG.rst and
# changelogs/changelog.yaml) generated from changelogs/fragments for the version galaxy.yml names,
# the one place it is set, then the artifact ansible-galaxy builds of exactly what a user installs,
# in .build/dist. Arguments go to antsibull-changelog release (--date YYYY-MM-DD, for example).
# Run it on a clean checkout with the version set in galaxy.yml, then commit what it changed (the
# fragments become the changelog) and tag the commit with the version.
set -euo pipefail
cd "$(dirname "$0")/.."
antsibull-changelog lint
antsibull-changelog release "$@"
ansible-galaxy collection build --force --output-path .build/dist .
