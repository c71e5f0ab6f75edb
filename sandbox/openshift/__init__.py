"""OpenShift emulation for the sandbox: DeploymentConfig and ImageStream CRDs and their controllers.

Run as `python -m sandbox.openshift --kubeconfig K --registry R --ready-file F` (see main.py).
"""
