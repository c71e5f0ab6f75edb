"""Certificates and keys of a sandbox, made once per directory with the openssl command line tool."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

_FILES = ("ca.crt", "apiserver.crt", "apiserver.key", "sa.key", "sa.pub", "front-proxy-ca.crt",
          "front-proxy-client.crt", "front-proxy-client.key", "kubelet.crt", "kubelet.key",
          "apiserver-kubelet-client.crt", "apiserver-kubelet-client.key")  # fmt: skip


def ensure(pki: Path, log: Callable[[str], None] = lambda _msg: None) -> None:
    """Create the CA, the API server's serving cert, the service account key pair, the front proxy
    CA and client cert, the kubelet's serving cert and the API server's client cert for kubelets
    (`--kubelet-client-certificate`, as kubeadm's `apiserver-kubelet-client`) in `pki`, unless they are
    all there already."""
    if all((pki / f).exists() for f in _FILES):
        return
    log(f"generating certificates in {pki}")
    pki.mkdir(parents=True, exist_ok=True)
    _ca(pki, "ca", "sandbox-ca")
    _cert(pki, "apiserver", "ca", "kube-apiserver",
          "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
          "DNS:kubernetes.default.svc\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")  # fmt: skip
    _ca(pki, "front-proxy-ca", "sandbox-front-proxy-ca")
    _cert(pki, "front-proxy-client", "front-proxy-ca", "front-proxy-client",
          "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")  # fmt: skip
    _cert(pki, "kubelet", "ca", "fake-node",
          "subjectAltName=IP:127.0.0.1,DNS:fake-node,DNS:localhost\nbasicConstraints=CA:FALSE\n"
          "extendedKeyUsage=serverAuth\n")  # fmt: skip
    _cert(pki, "apiserver-kubelet-client", "ca", "kube-apiserver-kubelet-client",
          "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n", org="system:masters")  # fmt: skip
    _openssl(pki, "genrsa", "-out", "sa.key", "2048")
    _openssl(pki, "rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")


def _ca(pki: Path, name: str, cn: str) -> None:
    _openssl(pki, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
             f"{name}.crt", "-days", "3650", "-subj", f"/CN={cn}")  # fmt: skip


def _cert(pki: Path, name: str, ca: str, cn: str, ext: str, org: str = "") -> None:
    (pki / f"{name}.ext").write_text(ext)
    subject = f"/O={org}/CN={cn}" if org else f"/CN={cn}"
    _openssl(pki, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", subject)  # fmt: skip
    _openssl(pki, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-out", f"{name}.crt", "-days", "3650",
             "-extfile", f"{name}.ext")  # fmt: skip


def _openssl(pki: Path, *args: str) -> None:
    res = subprocess.run(["openssl", *args], cwd=pki, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed in {pki}: {res.stderr.strip()}")
