"""Client ID Metadata Documents: a client whose id is the https URL of its own metadata, fetched by the authorization
server with SSRF protection (public addresses only, unless the development setting allows others; bounded in size and
time; no redirects).

The document is served by the test over real TLS, with a certificate from a CA the test makes and the fetch trusts
(SSL_CERT_FILE), on 127.0.0.1: so every test here that expects success turns ``CIMD_ALLOW_PRIVATE`` on, and the test
that leaves it off shows a loopback document refused.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from errcatalog.access.models import ClientToken
from tests.support.oauth_flow import REDIRECT_URI, Person, client_metadata, oauth_client, oauth_provider

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct horse battery staple"


def _certificate(tmp_path) -> tuple[str, str, str]:
    """A CA and a certificate for 127.0.0.1 it signed: (CA file, certificate file, key file)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "errcatalog test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # key_cert_sign and crl_sign
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(ca_key, hashes.SHA256())
    )
    files = tmp_path / "ca.pem", tmp_path / "cert.pem", tmp_path / "key.pem"
    files[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files[1].write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    files[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return tuple(str(file) for file in files)


class DocumentServer(ThreadingHTTPServer):
    """Serves ``/client.json`` over TLS: a metadata document whose ``client_id`` is its own URL, or a huge or slow
    answer when a test sets ``mode``."""

    daemon_threads = True

    def __init__(self, certificate: str, key: str) -> None:
        super().__init__(("127.0.0.1", 0), _DocumentHandler)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(certificate, key)
        self.socket = context.wrap_socket(self.socket, server_side=True)
        self.mode = "document"
        self.fetches = 0

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server_address[1]}/client.json"


class _DocumentHandler(BaseHTTPRequestHandler):
    server: DocumentServer

    def do_GET(self) -> None:
        self.server.fetches += 1
        if self.server.mode == "slow":
            time.sleep(3)
        metadata = client_metadata().model_dump(mode="json", exclude_none=True)
        body = json.dumps({**metadata, "client_id": self.server.url, "client_name": "Document Client"}).encode()
        if self.server.mode == "huge":
            body = json.dumps({"client_id": self.server.url, "padding": "x" * 100_000}).encode()
        elif self.server.mode == "deep":  # within the 16 KB a document may take, far deeper than a decoder recurses
            body = b'{"x": ' + b"[" * 7000 + b"]" * 7000 + b"}"
        elif self.server.mode == "client_credentials":
            body = json.dumps({**json.loads(body), "grant_types": ["client_credentials"]}).encode()
        elif self.server.mode == "invalid_json":
            body = b'{"client_id": "<b>not closed'
        elif self.server.mode == "array":
            body = b"[]"
        elif self.server.mode == "other_client_id":
            body = json.dumps({**json.loads(body), "client_id": "https://elsewhere.example/client.json"}).encode()
        status, media_type = 200, "application/json"
        if self.server.mode == "missing":
            status, body = 404, b"<h1>Not Found</h1><script>alert(1)</script>"
        elif self.server.mode == "html":
            media_type = "text/html"
        self.send_response(status)
        self.send_header("Content-Type", media_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.server.mode == "trickle":  # a byte every 0.1 s: each read is quick, the body never ends in time
            for byte in body[:60]:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.1)
            return
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def document(tmp_path, monkeypatch) -> Iterator[DocumentServer]:
    ca, certificate, key = _certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", ca)  # the fetch trusts the test's CA, and only through the usual store
    server = DocumentServer(certificate, key)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


@pytest.fixture
def person(django_user_model, catalog) -> Person:
    django_user_model.objects.create_user(username="ada", password=PASSWORD)
    return Person("ada", PASSWORD)


@pytest.fixture
def private_allowed(settings):
    settings.OAUTH = {**settings.OAUTH, "CIMD_ALLOW_PRIVATE": True}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdks_client_signs_in_with_its_metadata_document_instead_of_registering(
    mcp, person, document, private_allowed, mode
):
    async def scenario():
        provider = oauth_provider(mcp.url, person, client_metadata_url=document.url)
        async with oauth_client(mcp.url, provider, mode=mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            result = await client.call_tool("whoami", {})
            return result.structured_content["client"]

    assert asyncio.run(scenario()) == "Document Client"
    assert document.fetches >= 1
    grant = ClientToken.objects.get(application__isnull=False)
    assert grant.application.client_id == document.url  # no registration: the URL is the client's id
    assert "Document Client" in person.consent_page and "127.0.0.1:9" in person.consent_page


def _authorize(mcp, person: Person, client_id: str) -> httpx2.Response:
    base = mcp.url.removesuffix("/mcp")
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
        "state": "s",
    }

    async def visit():
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            return await person._signed_in_page(http, str(httpx2.URL(base + "/oauth/authorize/", params=query)))

    return asyncio.run(visit())


def test_a_document_on_a_loopback_address_is_never_fetched_by_default(mcp, person, document):
    page = _authorize(mcp, person, document.url)
    assert page.status_code == 400 and "Allow" not in page.text
    assert document.fetches == 0  # refused on the address, before any connection


@pytest.mark.parametrize("mode", ["huge", "slow", "trickle"])
def test_a_huge_or_slow_document_is_refused(mcp, person, document, private_allowed, settings, mode):
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "CIMD_FETCH_TIMEOUT_SECONDS": 1}
    document.mode = mode
    started = time.monotonic()
    page = _authorize(mcp, person, document.url)
    assert page.status_code == 400 and "Allow" not in page.text
    assert time.monotonic() - started < 3  # the fetch gave up at its bound, not when the server finished
    assert not ClientToken.objects.filter(application__isnull=False).exists()


@pytest.mark.parametrize("mode", ["deep", "client_credentials"])
def test_a_document_registration_would_refuse_is_refused_without_a_500(mcp, person, document, private_allowed, mode):
    document.mode = mode
    page = _authorize(mcp, person, document.url)
    assert page.status_code == 400 and "Allow" not in page.text
    assert document.fetches == 1
    assert not ClientToken.objects.filter(application__isnull=False).exists()


@pytest.mark.parametrize(
    "client_id", ["https://10.0.0.5/client.json", "https://169.254.169.254/latest/meta-data", "https://[::1]/c.json"]
)
def test_a_document_on_a_private_or_metadata_address_is_refused(mcp, person, client_id):
    page = _authorize(mcp, person, client_id)
    assert page.status_code == 400 and "Allow" not in page.text
    assert not ClientToken.objects.filter(application__isnull=False).exists()
