"""Local sandbox: a real Kubernetes control plane, a stand-in kubelet, an image "registry" and an
OpenShift emulation, so rollguard can be tried and tested without a cluster.

`python -m sandbox up|down|status`; the Python API is in `sandbox.cluster` and `sandbox.registry`.
"""
