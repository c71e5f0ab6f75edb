"""OpenShift emulation for the sandbox: DeploymentConfig and ImageStream CRDs and their controllers.

Run as `python -m sandbox.openshift --kubeconfig K --registry R --ready-file F` (see main.py).

Emulated, after OpenShift's own controllers (openshift-controller-manager, oc's deployer strategies):
- API-server defaults of DCs (triggers, strategy and its params, revisionHistoryLimit, pod template
  defaults, image trigger namespaces) and ImageStreams (spec tag generation, policies), applied by a
  mutating admission webhook so a client sees them in the answer to its own write; a little validation.
- DC controller: triggers (ConfigChange, automatic ImageChange on ImageStreamTags), latestVersion bump
  before the RC `<dc>-<N>` is created (annotations, labels, selector, owner reference as OpenShift's
  MakeDeployment), cancellation of older running rollouts, paused DCs, blank images postponing rollouts,
  active RC (newest Complete) at spec.replicas and every other RC at 0, revisionHistoryLimit pruning,
  status with Available/Progressing conditions, Events.
- Deployer: RC phases New -> Running -> Complete | Failed, Rolling (surge/unavailability steps, first
  rollout as Recreate with acceptance) and Recreate, timeoutSeconds as a progress deadline, cancellation
  through `openshift.io/deployment.cancelled`, `oc rollout retry` (phase set back to New).
- ImageStream controller: DockerImage tags pinned by digest through the sandbox registry,
  ImageStreamImage copies and ImageStreamTag references (also across namespaces), tag history,
  ImportSuccess=False conditions, referencePolicy Local.

- Deployer pods and lifecycle hook pods (`pre`, `mid`, `post`; execNewPod and tagImages; Abort, Retry,
  Ignore), the Custom strategy's own deployer image (`deployer.py`, `hooks.py`).

Not emulated: the `instantiate` and `rollback` subresources (a CRD cannot serve them), hook volumes, the
deployer's `--until`, image import from real registries, `status.publicDockerImageRepository`.
"""
