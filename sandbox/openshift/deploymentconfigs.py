"""The DeploymentConfig controller: triggers, RC creation, replica reconciliation and status.

Re-written from OpenShift's DC controller (openshift-controller-manager pkg/apps/deploymentconfig) and its
image trigger controller. One work queue keyed by DC: a DC is never reconciled by two threads at once.
Watches on DCs, their RCs (label openshift.io/deployment-config.name) and ImageStreams feed the queue.
"""

from __future__ import annotations

import logging
import threading
import time

from sandbox.openshift import appsutil as u
from sandbox.openshift import latestversion
from sandbox.openshift import status as st
from sandbox.openshift.defaults import default_dc
from sandbox.openshift.deployer import Deployer
from sandbox.openshift.events import Recorder
from sandbox.openshift.imagestreams import ImageStreamController
from sandbox.openshift.informer import Informer, key_of
from sandbox.openshift.kube import JSON, MERGE_PATCH, ApiError, Kube
from sandbox.openshift.replicationcontrollers import controller_ref, make_deployment
from sandbox.openshift.triggercache import TriggerCache
from sandbox.openshift.triggers import rollout_details, trigger_sources, update_images
from sandbox.openshift.workqueue import Requeue, WorkQueue, run_workers

log = logging.getLogger(__name__)
Key = tuple[str, str]
_MAX_PASSES = 8  # a pass that writes the DC continues with the written object, within one sync


class DeploymentConfigController:
    """Reconciles every DeploymentConfig in the cluster."""

    def __init__(self, kube: Kube, images: ImageStreamController, workers: int = 4) -> None:
        self.kube, self.images, self.workers = kube, images, workers
        self.recorder = Recorder(kube, "deploymentconfig-controller")
        self.dcs = Informer(kube, f"{u.DC_PATH}/deploymentconfigs", self._on_dc)
        self.rcs = Informer(
            kube,
            "/api/v1/replicationcontrollers",
            self._on_rc,
            label_selector=u.DC_NAME,
            index=lambda rc: (rc["metadata"].get("labels") or {}).get(u.DC_NAME),
        )
        # deployer (and hook) pods, by the DC named in their annotation: their phases drive the RCs'
        self.pods = Informer(
            kube,
            "/api/v1/pods",
            self._on_pod,
            label_selector=u.DEPLOYER_POD_FOR,
        )
        self.deployer = Deployer(kube, self.rcs, self.pods, self.recorder)
        self.queue = WorkQueue("deploymentconfigs")
        self.triggers = TriggerCache()  # (namespace, image stream) -> DCs it triggers
        self._local = threading.local()  # per worker: when to look at the DC being synced again
        images.listeners.append(self._on_stream)

    def start(self) -> None:
        self.rcs.start()
        self.pods.start()
        self.dcs.start()
        self.rcs.synced.wait()
        self.pods.synced.wait()
        self.dcs.synced.wait()
        run_workers(self.queue, self.sync, self.workers)
        threading.Thread(target=self._resync, name="dc-resync", daemon=True).start()

    def _resync(self, every: float = 300.0) -> None:
        """Look at every DC now and then, as an informer's resync would: a safety net, not a driver."""
        while True:
            time.sleep(every)
            for dc in self.dcs.objects():
                self.queue.add(key_of(dc))

    # -- events -----------------------------------------------------------------------------------------

    def _on_dc(self, etype: str, dc: JSON) -> None:
        key = key_of(dc)
        self.triggers.update(key, set() if etype == "DELETED" else trigger_sources(dc))
        self.queue.add(key)

    def _on_rc(self, _etype: str, rc: JSON) -> None:
        dc_name = (rc["metadata"].get("labels") or {}).get(u.DC_NAME)
        if dc_name:
            self.queue.add((rc["metadata"]["namespace"], dc_name))

    def _on_pod(self, _etype: str, pod: JSON) -> None:
        dc_name = (pod["metadata"].get("annotations") or {}).get(u.DC_NAME)
        if dc_name:
            self.queue.add((pod["metadata"]["namespace"], dc_name))

    def _on_stream(self, _etype: str, stream: JSON) -> None:
        for k in self.triggers.followers(key_of(stream)):
            self.queue.add(k)

    # -- reconcile --------------------------------------------------------------------------------------

    def sync(self, key: Key) -> None:
        dc = self.dcs.get(*key)
        self._local.requeue_in = None
        try:
            for _ in range(_MAX_PASSES):
                if dc is None:
                    break
                dc = self._handle(dc)
        finally:
            if self._local.requeue_in is not None:
                self.queue.add_after(key, self._local.requeue_in)

    def _handle(self, dc: JSON) -> JSON | None:
        """One pass of OpenShift's Handle(); returns the DC written in this pass to go on with, or None."""
        dc.setdefault("kind", "DeploymentConfig")
        dc.setdefault("apiVersion", u.GROUP_VERSION)
        marked, bump = latestversion.pending(dc)
        if marked:  # a client's latestVersion + 1, which the API would have stored with its write
            return self._apply_requested_version(dc, bump)
        # generation 1: never updated since its create, whose defaults it then also lacks
        defaulted = default_dc(dc, create=int(dc["metadata"].get("generation") or 0) == 1)
        if defaulted.get("spec") != dc.get("spec"):  # the admission webhook was not there: default now
            return self._update(dc, defaulted)
        triggered = update_images(dc, self.images.tag_image)
        if triggered is not None:
            return self._update(dc, triggered)

        rcs = self._claim(dc)
        status = dc.get("status") or {}
        version = int(status.get("latestVersion") or 0)
        if version == 0 and not (u.has_trigger(dc, "ConfigChange") or u.has_trigger(dc, "ImageChange")):
            return self._update_status(dc, rcs, True)
        # rollouts run on (and are cancelled) whatever the DC's state: that is the deployer's business
        for rc in sorted(rcs, key=u.version_of):
            if not u.is_terminated(rc):
                self._deploy_step(dc, rcs, rc)
        rcs = self._claim(dc)
        if dc["metadata"].get("deletionTimestamp"):
            return self._update_status(dc, rcs, True)
        if dc.get("spec", {}).get("paused"):
            self._cleanup(dc, rcs)
            return self._update_status(dc, rcs, True)

        latest_exists, latest = u.latest_deployment(dc, rcs)
        if latest is not None and u.version_of(latest) > version:  # status lost a bump: catch up
            return self._write_status(dc, {**status, "latestVersion": version + 1})
        if not latest_exists:
            self._cancel_running(dc, rcs)
        for c in u.containers(dc):
            if not (c.get("image") or "").strip():  # a trigger has yet to fill this image in
                return self._update_status(dc, rcs, True)

        details = rollout_details(dc, latest_exists, latest)
        if details == "skip":
            return self._update_status(dc, rcs, True)
        if details:
            return self._write_status(dc, {**status, "latestVersion": version + 1, "details": details})
        if latest_exists and latest is not None:
            if not u.is_terminated(latest):
                return self._update_status(dc, rcs, False)
            return self._reconcile_deployments(dc, rcs)
        return self._create_deployment(dc, rcs)

    def _apply_requested_version(self, dc: JSON, bump: int | None) -> JSON | None:
        """Store the requested latestVersion (sandbox/openshift/latestversion.py), then drop the mark."""
        if bump is not None:
            written = self._write_status(dc, {**(dc.get("status") or {}), "latestVersion": bump})
            if written is None or latestversion.version(written) != bump:
                return written  # re-read after a conflict: the next pass looks again
            dc = written
        patch = {
            "metadata": {
                "resourceVersion": dc["metadata"]["resourceVersion"],
                "annotations": {latestversion.REQUEST: None},
            }
        }
        return self._put(dc, "", patch, method="PATCH", content_type=MERGE_PATCH)

    def _deploy_step(self, dc: JSON, rcs: list[JSON], rc: JSON) -> None:
        delay = self.deployer.step(dc, rcs, rc)
        if delay is not None:
            current = self._local.requeue_in
            self._local.requeue_in = delay if current is None else min(current, delay)

    # -- older rollouts ---------------------------------------------------------------------------------

    def _cancel_running(self, dc: JSON, rcs: list[JSON]) -> None:
        """Cancel older rollouts still running; raise Requeue while any has yet to end."""
        version = int((dc.get("status") or {}).get("latestVersion") or 0)
        awaiting = False
        for rc in rcs:
            if u.is_terminated(rc):
                continue
            if not u.is_cancelled(rc):
                m = rc["metadata"]
                patch = {
                    "metadata": {"annotations": {u.CANCELLED: "true", u.STATUS_REASON: u.CANCELLED_BY_NEWER}}
                }
                try:
                    rc = self.kube.request("PATCH", u.rc_path(rc), patch, content_type=MERGE_PATCH)
                except ApiError as e:
                    if e.status == 404:
                        continue
                    raise
                self.rcs.store(rc)
                self.recorder.event(
                    dc,
                    "Normal",
                    "DeploymentCancelled",
                    f'Cancelled deployment "{m["name"]}" superceded by version {version}',
                )
            self._deploy_step(dc, rcs, rc)  # the deployer ends it now, as a deleted deployer pod would
            current = self.rcs.get(rc["metadata"]["namespace"], rc["metadata"]["name"])
            if current is not None and not u.is_terminated(current):
                awaiting = True
        if awaiting:
            self.recorder.event(
                dc,
                "Normal",
                "DeploymentAwaitingCancellation",
                f"Deployment of version {version} awaiting cancellation of older running deployments",
            )
            raise Requeue(f"found previous inflight deployment for {dc['metadata']['name']} - requeuing")

    # -- replication controllers ------------------------------------------------------------------------

    def _claim(self, dc: JSON) -> list[JSON]:
        """The DC's RCs: those it controls, plus orphans with its label (adopted, as OpenShift does)."""
        ns, name = key_of(dc)
        uid = dc["metadata"].get("uid")
        owned = []
        for rc in self.rcs.by_index(ns, name):
            refs = [r for r in rc["metadata"].get("ownerReferences") or [] if r.get("controller")]
            if refs and refs[0].get("uid") == uid:
                owned.append(rc)
            elif (
                not refs
                and not rc["metadata"].get("deletionTimestamp")
                and not dc["metadata"].get("deletionTimestamp")
            ):
                adopted = self._adopt(dc, rc)
                if adopted is not None:
                    owned.append(adopted)
        return owned

    def _adopt(self, dc: JSON, rc: JSON) -> JSON | None:
        m = rc["metadata"]
        patch = {
            "metadata": {
                "resourceVersion": m["resourceVersion"],
                "ownerReferences": [*(m.get("ownerReferences") or []), controller_ref(dc)],
            }
        }
        try:
            adopted = self.kube.request("PATCH", u.rc_path(rc), patch, content_type=MERGE_PATCH)
        except ApiError as e:
            if e.status in (404, 409):
                return None
            raise
        self.rcs.store(adopted)
        return adopted

    def _create_deployment(self, dc: JSON, rcs: list[JSON]) -> JSON | None:
        rc = make_deployment(dc)
        ns, name = key_of(dc)
        version = dc["status"]["latestVersion"]
        try:
            created = self.kube.request("POST", f"/api/v1/namespaces/{ns}/replicationcontrollers", rc)
        except ApiError as e:
            if e.status == 409:
                existing = self.kube.get(
                    f"/api/v1/namespaces/{ns}/replicationcontrollers/{rc['metadata']['name']}"
                )
                self.rcs.store(existing)
                refs = [r for r in existing["metadata"].get("ownerReferences") or [] if r.get("controller")]
                if refs and refs[0].get("uid") == dc["metadata"].get("uid"):
                    raise Requeue(
                        f"caches for RC {ns}/{rc['metadata']['name']} are stale, waiting to catch up"
                    ) from e
                msg = f"deployment {ns}/{rc['metadata']['name']} already exists and it couldn't be adopted"
            else:
                msg = str(e.body.get("message") or e)
            self.recorder.event(
                dc, "Warning", "DeploymentCreationFailed", f"Couldn't deploy version {version}: {msg}"
            )
            cond = st.new_condition("Progressing", "False", u.FAILED_RC_CREATE_REASON, msg)
            self._update_status(dc, rcs, True, cond)
            raise Requeue(f"couldn't create deployment for deployment config {ns}/{name}: {msg}") from e
        self.rcs.store(created)
        msg = f'Created new replication controller "{created["metadata"]["name"]}" for version {version}'
        self.recorder.event(dc, "Normal", "DeploymentCreated", msg)
        log.info("%s/%s: %s", ns, name, msg)
        rcs = [*rcs, created]
        self._cleanup(dc, rcs)
        cond = st.new_condition("Progressing", "True", u.NEW_RC_REASON, msg)
        self._update_status(dc, rcs, True, cond)
        return self.dcs.get(ns, name)  # go on at once: the deployer starts the rollout in the next pass

    def _reconcile_deployments(self, dc: JSON, rcs: list[JSON]) -> JSON | None:
        """The active RC (newest Complete) follows spec.replicas; every other RC goes to zero."""
        active = u.active_deployment(rcs)
        replicas = int(dc.get("spec", {}).get("replicas") or 0)
        updated = []
        for rc in rcs:
            want = replicas if active is not None and rc is active and not dc["spec"].get("test") else 0
            have = u.spec_replicas(rc)
            if want != have:
                m = rc["metadata"]
                try:
                    rc = self.kube.request(
                        "PATCH", u.rc_path(rc), {"spec": {"replicas": want}}, content_type=MERGE_PATCH
                    )
                except ApiError as e:
                    self.recorder.event(
                        dc,
                        "Warning",
                        "ReplicationControllerScaleFailed",
                        f'Failed to scale replication controler "{m["name"]}" from {have} to {want}: {e}',
                    )
                    raise
                self.rcs.store(rc)
                self.recorder.event(
                    dc,
                    "Normal",
                    "ReplicationControllerScaled",
                    f'Scaled replication controller "{m["name"]}" from {have} to {want}',
                )
            updated.append(rc)
        self._cleanup(dc, updated)
        return self._update_status(dc, updated, True)

    def _cleanup(self, dc: JSON, rcs: list[JSON]) -> None:
        """Delete the oldest RCs scaled to zero beyond spec.revisionHistoryLimit."""
        limit = dc.get("spec", {}).get("revisionHistoryLimit")
        if limit is None:
            return
        ordered = sorted(rcs, key=u.version_of)
        active = u.active_deployment(rcs)
        if active is None:
            latest = int((dc.get("status") or {}).get("latestVersion") or 0)
            candidates = [rc for rc in ordered if u.version_of(rc) != latest]
        else:
            candidates = [rc for rc in ordered if u.version_of(rc) < u.version_of(active)]
        for rc in candidates[: max(0, len(candidates) - int(limit))]:
            if u.spec_replicas(rc) != 0:
                continue  # counts against the limit, pruned once scaled down
            try:
                self.kube.request("DELETE", u.rc_path(rc), {"propagationPolicy": "Background"})
            except ApiError as e:
                if e.status != 404:
                    self.recorder.event(
                        dc, "Warning", "DeploymentCleanupFailed", f"Couldn't clean up deployments: {e}"
                    )
                    continue
            self.rcs.forget(rc)
            self.deployer.forget(rc)

    # -- writes -----------------------------------------------------------------------------------------

    def _update(self, dc: JSON, new: JSON) -> JSON | None:
        """PUT the DC (spec changes: defaults, triggered images); on a conflict read it again."""
        return self._put(dc, "", new)

    def _update_status(
        self, dc: JSON, rcs: list[JSON], update_observed: bool, *additional: JSON
    ) -> JSON | None:
        new = st.calculate(dc, rcs, update_observed, *additional)
        if new != dc.get("status"):
            self._write_status(dc, new)
        return None

    def _write_status(self, dc: JSON, status: JSON) -> JSON | None:
        return self._put(dc, "/status", {**dc, "status": status})

    def _put(
        self, dc: JSON, sub: str, body: JSON, *, method: str = "PUT", content_type: str = "application/json"
    ) -> JSON | None:
        """PUT (or PATCH) the DC or its subresource; a conflict re-reads it, a deletion ends the work."""
        ns, name = key_of(dc)
        path = f"{u.DC_PATH}/namespaces/{ns}/deploymentconfigs/{name}"
        try:
            updated = self.kube.request(method, path + sub, body, content_type=content_type)
        except ApiError as e:
            if e.status == 409:
                return self._refresh(path)
            if e.status == 404:
                return None
            raise
        self.dcs.store(updated)
        return updated

    def _refresh(self, path: str) -> JSON | None:
        try:
            fresh = self.kube.get(path)
        except ApiError as e:
            if e.status == 404:
                return None
            raise
        self.dcs.store(fresh)
        return self.dcs.get(*key_of(fresh))
