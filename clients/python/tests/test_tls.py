"""The client over https with a private CA and client certificates (mTLS), against a real
cluster whose client port requires them. Run by test/http/python-client.test.ts with
PALISADE_TLS_URLS and the PEM files PALISADE_CA, PALISADE_CERT, PALISADE_KEY, and
PALISADE_ROGUE_CA (a CA that did not sign the nodes)."""
from __future__ import annotations

import os
import ssl
import sys
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from palisade_client import Client, Unavailable  # noqa: E402

URLS = [u for u in os.environ.get("PALISADE_TLS_URLS", "").split(",") if u]
CA = os.environ.get("PALISADE_CA", "")
CERT = os.environ.get("PALISADE_CERT", "")
KEY = os.environ.get("PALISADE_KEY", "")
ROGUE_CA = os.environ.get("PALISADE_ROGUE_CA", "")


@unittest.skipUnless(URLS and CA and CERT and KEY and ROGUE_CA, "PALISADE_TLS_URLS and the PEM files are not set")
class Tls(unittest.TestCase):
    def test_a_lock_over_mtls_with_a_private_ca(self) -> None:
        n = f"py/tls/{uuid.uuid4().hex[:8]}"
        with Client(URLS, ca=CA, cert=CERT, key=KEY) as a, Client(URLS, ca=CA, cert=CERT, key=KEY) as b:
            with a.lock(n, wait=5.0) as lock:
                self.assertIsNotNone(lock.token)
                self.assertFalse(b.lock(n).acquire(blocking=False))
            self.assertEqual(a.cluster_id, "palisade-test")

    def test_a_ready_ssl_context(self) -> None:
        ctx = ssl.create_default_context(cafile=CA)
        ctx.load_cert_chain(CERT, KEY)
        with Client(URLS, ssl_context=ctx) as c:
            c.acquire(f"py/tls/{uuid.uuid4().hex[:8]}").release()

    def test_without_a_client_certificate_the_nodes_refuse(self) -> None:
        with Client(URLS, ca=CA, request_timeout=1.0) as c:
            with self.assertRaises(Unavailable):
                c.status()

    def test_nodes_signed_by_another_ca_are_not_trusted(self) -> None:
        with Client(URLS, ca=ROGUE_CA, cert=CERT, key=KEY, request_timeout=1.0) as c:
            with self.assertRaises(Unavailable) as e:
                c.status()
            self.assertIn("CERTIFICATE_VERIFY_FAILED", str(e.exception))

    def test_ws_scheme_urls_are_taken_as_https(self) -> None:
        wss = [u.replace("https://", "wss://") for u in URLS]
        with Client(wss, ca=CA, cert=CERT, key=KEY) as c:
            self.assertIn("role", c.status())


if __name__ == "__main__":
    unittest.main()
