# Entry points. Each one installs what it needs first (scripts/bootstrap.sh).
.PHONY: release site facts test unit sanity matrix lint integration site-test molecule bench bench-fleet bench-site bench-inference bench-requests build docs clean

export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

# Real exo where its sources can be reached, else the stand-in: scripts/site-exo.py says which.
site:
	@scripts/bootstrap.sh
	.venv/bin/python scripts/site-exo.py .build/site-exo.yml
	.venv/bin/ansible-playbook site.yml -e @.build/site-exo.yml $(ARGS)

facts:
	@scripts/bootstrap.sh
	.venv/bin/ansible-playbook playbooks/facts.yml $(ARGS)

test:
	tests/run.sh all

unit sanity matrix lint integration molecule:
	tests/run.sh $@

# The main job, run twice on this machine: the second run must change nothing.
site-test:
	tests/run.sh site

bench:
	@scripts/bootstrap.sh
	.venv/bin/python benchmarks/probe.py

# Gathering on 10 and 50 lab hosts over SSH (root: network namespaces); several minutes.
bench-fleet:
	@scripts/bootstrap.sh
	.venv/bin/python benchmarks/fleet.py $(ARGS)

# site.yml in check mode over 1 and 10 simulated hosts in rings of up to 8 (an inventory group each)
# against Ansible's floor, then its planners over 1,000 and 10,000 hosts in rings of 8 in-process;
# about ten minutes on two busy cores (ARGS=--sizes 1,10,100 for more).
bench-site:
	@scripts/bootstrap.sh
	.venv/bin/python benchmarks/fleet_site.py $(ARGS)

# The changelog from the fragments for galaxy.yml's version, then the artifact (scripts/release.sh).
release:
	@scripts/bootstrap.sh --tests
	PATH=$(CURDIR)/.venv/bin:$$PATH scripts/release.sh $(ARGS)

# Real exo on the synthetic 1B model: one instance against a ring of two; several minutes, about 8 GB.
bench-inference:
	@scripts/bootstrap.sh
	.venv/bin/python benchmarks/inference.py $(ARGS)

# What the patches of exo cost a request, and the memory each request in flight adds; several minutes, about 8 GB.
bench-requests:
	@scripts/bootstrap.sh
	.venv/bin/python benchmarks/requests.py $(ARGS)

build:
	@scripts/bootstrap.sh
	.venv/bin/ansible-galaxy collection build --force --output-path .build/dist .

# The docs site in .build/docs-site/html (antsibull-docs and Sphinx, offline).
docs:
	@scripts/bootstrap.sh --tests
	.venv/bin/python scripts/docs-site.py

clean:
	rm -rf .build .venv
