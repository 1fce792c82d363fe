"""Schemathesis hooks of scripts/fuzz.sh: authentication that survives the fuzzer.

Loaded with SCHEMATHESIS_HOOKS=hooks (PYTHONPATH=scripts/fuzz). fuzz.sh passes, in the
environment:

  FUZZ_BASE_URL        http://127.0.0.1:PORT of the server under test
  FUZZ_ADMIN_USER      the platform administrator fuzz.sh created, and
  FUZZ_ADMIN_PASSWORD  its password
  FUZZ_DOCS_TOKEN      the /api/docs/ API token fuzz.sh created
  FUZZ_DOCS_PROJECT    the id of the document project fuzz.sh created
  FUZZ_ATRIUM_BIN      the `atrium` binary, to mint replacements (with the server's DATABASE_URL)
  FUZZ_EVENTS          a file this module appends one line per re-login / replacement to

Which header goes where is decided by path: `/api/v1/*` gets `Authorization: Bearer <jwt>`,
`/api/docs/*` gets `Authorization: Token <token>`.

Fuzzed requests may end the caller's own credentials. Nothing is excluded for that; instead:

* `POST /api/v1/auth/logout` (and anything else that revokes the session) makes the next
  request answer 401; schemathesis then asks `BearerAuth.get` again (retry_on 401) and replays
  the request with a fresh login.
* `PUT /api/v1/users/{id}` on the administrator itself with a new `password` or `role_ids`
  succeeds (the service allows it): the password no longer works, or the roles no longer grant
  everything. `after_call` notices the 2xx answer and retires that administrator; the next
  request logs in as a new one minted with `atrium admin create`.
* `DELETE /api/v1/doc-tokens/{id}` may revoke the docs token: the next /api/docs/ request
  answers 401, `DocsTokenAuth.get` finds the token dead and mints one with
  `atrium docs token create`.

The fixture's own logins come from 127.0.0.2, not the fuzzer's 127.0.0.1, so the per-address
throttle of failed logins (the fuzzer fails hundreds) never locks the fixture out.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import threading
import time

import requests
import schemathesis
from requests.adapters import HTTPAdapter

BASE_URL = os.environ["FUZZ_BASE_URL"].rstrip("/")
ATRIUM_BIN = os.environ["FUZZ_ATRIUM_BIN"]
EVENTS = os.environ.get("FUZZ_EVENTS")
FIXTURE_SOURCE = os.environ.get("FUZZ_FIXTURE_SOURCE", "127.0.0.2")


def _event(kind: str, detail: str) -> None:
    if EVENTS:
        with open(EVENTS, "a", encoding="utf-8") as f:
            f.write(f"{time.strftime('%H:%M:%S')} {kind} {detail}\n")


class _SourceAddress(HTTPAdapter):
    def __init__(self, address: str) -> None:
        self._address = address
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        kwargs["source_address"] = (self._address, 0)
        super().init_poolmanager(*args, **kwargs)


def _session() -> requests.Session:
    s = requests.Session()
    s.mount("http://", _SourceAddress(FIXTURE_SOURCE))
    return s


def _cli(*args: str, env: dict[str, str] | None = None) -> str:
    """Runs `atrium <args>` against the server's database; returns its last output line."""
    done = subprocess.run([ATRIUM_BIN, *args], capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})
    if done.returncode != 0:
        raise RuntimeError(f"atrium {' '.join(args[:3])} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip().splitlines()[-1]


class _Admin:
    """The platform administrator the fuzzer acts as, replaced when the fuzzer ruins it."""

    def __init__(self) -> None:
        self.username = os.environ["FUZZ_ADMIN_USER"]
        self.password = os.environ["FUZZ_ADMIN_PASSWORD"]
        self.user_id: int | None = None
        self.token: str | None = None
        self.minted = 0
        self.lock = threading.RLock()
        self.http = _session()

    def _login(self) -> requests.Response:
        return self.http.post(
            f"{BASE_URL}/api/v1/auth/login",
            json={"method": "password", "username": self.username, "password": self.password},
            timeout=30,
        )

    def _mint(self, why: str) -> None:
        self.minted += 1
        self.username = f"fuzz-admin-{self.minted}-{secrets.token_hex(3)}"
        self.password = "Fz-" + secrets.token_urlsafe(18)
        _cli("admin", "create", "--username", self.username, env={"ATRIUM_ADMIN_PASSWORD": self.password})
        _event("admin-minted", f"{self.username} ({why})")

    def login(self, why: str) -> str:
        with self.lock:
            for attempt in range(3):
                r = self._login()
                if r.status_code == 200:
                    data = r.json()["data"]
                    self.token = data["access_token"]
                    self.user_id = data["user"]["id"]
                    _event("admin-login", f"{self.username} id {self.user_id} ({why})")
                    return self.token
                # 401: password changed under us; 429: the account locked. Either way a new one.
                _event("admin-login-refused", f"{self.username}: HTTP {r.status_code} {r.text[:200]}")
                self._mint(f"login answered {r.status_code}")
                why = "replacement"
            raise RuntimeError(f"cannot log in as a platform administrator: HTTP {r.status_code} {r.text[:300]}")

    def current(self) -> str:
        with self.lock:
            return self.token or self.login("after retirement")

    def retire(self, why: str) -> None:
        with self.lock:
            _event("admin-retired", f"{self.username} id {self.user_id}: {why}")
            self._mint(why)
            self.token = None


class _DocsToken:
    """The /api/docs/ token, replaced when the fuzzer revokes it."""

    def __init__(self) -> None:
        self.token = os.environ["FUZZ_DOCS_TOKEN"]
        self.project = os.environ.get("FUZZ_DOCS_PROJECT", "1")
        self.fetched = 0
        self.lock = threading.Lock()
        self.http = _session()

    def fetch(self) -> str:
        with self.lock:
            self.fetched += 1
            if self.fetched > 1:
                r = self.http.get(
                    f"{BASE_URL}/api/docs/",
                    params={"project": self.project},
                    headers={"Authorization": f"Token {self.token}"},
                    timeout=30,
                )
                if r.status_code == 401:
                    self.token = _cli("docs", "token", "create", "--name", f"fuzz-{secrets.token_hex(3)}")
                    _event("docs-token-minted", f"the previous one answered 401: {r.text[:200]}")
            return self.token


ADMIN = _Admin()
DOCS = _DocsToken()


@schemathesis.auth(refresh_interval=900).apply_to(path_regex=r"^/api/v1/")
class BearerAuth:
    """`/api/v1/*`: a fresh login at start, every 15 minutes, and after any 401 (then replayed)."""

    def get(self, case, ctx):  # type: ignore[no-untyped-def]
        return ADMIN.login("start or 401")

    def set(self, case, data, ctx):  # type: ignore[no-untyped-def]
        # Not `data`: the administrator may have been retired since it was cached.
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {ADMIN.current()}"


@schemathesis.auth(refresh_interval=900).apply_to(path_regex=r"^/api/docs")
class DocsTokenAuth:
    """`/api/docs/*`: the CLI-issued token; re-checked after any 401 and minted anew if revoked."""

    def get(self, case, ctx):  # type: ignore[no-untyped-def]
        return DOCS.fetch()

    def set(self, case, data, ctx):  # type: ignore[no-untyped-def]
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Token {DOCS.token}"


def _int(v: object) -> int | None:
    try:
        return int(v)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


@schemathesis.hook
def after_call(context, case, response):  # type: ignore[no-untyped-def]
    """Retires the administrator once a fuzzed request changed its own password or roles."""
    op = case.operation
    if op.method.upper() != "PUT" or op.path != "/api/v1/users/{id}" or not 200 <= response.status_code < 300:
        return
    body = case.body if isinstance(case.body, dict) else {}
    target = _int((case.path_parameters or {}).get("id"))
    if target is not None and target == ADMIN.user_id and ("password" in body or "role_ids" in body):
        changed = ", ".join(k for k in ("password", "role_ids") if k in body)
        ADMIN.retire(f"PUT /api/v1/users/{target} set its own {changed}")


# Rules the server enforces that JSON Schema cannot state. A request the document allows but
# one of these refuses is the contract working, not the document lying; every other refusal
# of schema-valid data stays a finding. Each entry: (field, pattern of the message), matched
# against every error of a 400's data.errors: the failure is excused only if all match.
UNSTATEABLE = [
    # Check characters computed over the other 17 characters (GB 32100, GB 11643), and a
    # birth date that exists.
    (r"credit_code", r"^check character does not match"),
    (r"id_card_no", r"^(check character does not match|contains no valid birth date)"),
    # A list of common passwords compared lower-case (the schema's `not` lists them as
    # written), and "not one character repeated", which needs a back-reference.
    (r"(password|new_password)", r"^(is too common|must not repeat one character)"),
    # Relative to the clock of the server.
    (r"expires_at", r"^must be in the future$"),
    # Comparisons between two fields of one object.
    (r"(payroll_policy\.)?(si|hf)_base_floor", r"^must not exceed (si|hf)_base_cap$"),
    (r"special_deductions(\[\d+\])?", r"to must not be before from"),
    (r"created_to", r"^must not be before created_from$"),
    (r"amount", r"^is \d+ fen but the items add up to \d+ fen$"),
    # One of two fields: an order's amount, or the items it is the sum of (an `anyOf` over
    # `required` would say it, and client generators cannot type one).
    (r"amount", r"^is required without items$"),
    # A sum of products over an array's items (quantity × unit_price, bounded like an amount).
    (r"items", r"^must add up to at (least|most) \d+ fen$"),
    # A payment configuration's mode and its fields (a `oneOf` over `required` would say it, and
    # client generators cannot type one; the mode may also be the stored one).
    (r"(mchid|appid|sub_mchid)", r"^is required in (direct|sub_merchant) mode$"),
    (r"(mchid|appid|api_v3_key|sub_mchid|sub_appid)", r"^is not used in (direct|sub_merchant) mode$"),
    # A resolution's note: not only spaces, no control characters (a JSON Schema pattern over
    # both would be one few clients can read).
    (r"note", r"^must (say why, not only spaces|not hold control characters other than line breaks)$"),
    # A share plan's receiver: what its type asks of the account and the name (said in the
    # schema's description, for the reason above), and the provider's own merchant id.
    (r"receiver\.account", r"^(must be a merchant id \(digits\) for a MERCHANT_ID receiver|is the platform's own merchant id)"),
    (r"receiver\.name", r"^is required for a MERCHANT_ID receiver"),
    # Who calls: platform and partner callers name the record's tenant, a tenant caller may
    # leave it out for its own (the document cannot make a field required per caller).
    (r"tenant_id", r"^is required$"),
    # Uniqueness by one property of the objects of an array.
    (r"items\[\d+\]\.employee_id", r"^this employee is already on the sheet$"),
    # What a PEM holds: a key of the right kind and size, a certificate that is valid now
    # and belongs to the key.
    (r"(private_key|certificate|platform_public_key)", r"."),
    # Relative to the server's clock: an order's expiry, the days a trade bill exists.
    (r"time_expire", r"^must be (in the future|at most \d+ days ahead)$"),
    (r"date", r"^(must be a past day|the pay platform keeps trade bills for three months)$"),
    # A limit in bytes of UTF-8 (JSON Schema counts characters).
    (r"(description|attach|reason|subject|path)", r"bytes"),
    # What an uploaded code package holds: a zip, its entries, its size unpacked.
    (r"package", r"."),
    # What an uploaded spreadsheet holds: its format told by content, its header row, and
    # each cell (employee numbers of the tenant, amounts in yuan).
    (r"(file|columns\..+|rows\[\d+\]\..+)", r"."),
    # Between two fields: a supplementary sheet (`kind`) lists its items and carries no base
    # salary, leave deduction or contributions in them.
    (r"items(\[\d+\]\.(base_salary|leave_deduction|si_base))?", r"supplementary sheet"),
    # A release campaign's tenants are chosen one way of three (a `oneOf` over `required`), and
    # the tenants in scope with an authorised mini-program are the server's state.
    (r"tenants", r"^(name exactly one of all, partner_id or tenant_ids|no tenant in your scope with an authorised mini-program matches)$"),
    # A wave is sized by a percentage or a count, one of two fields; percentages of all the
    # tenants rise from wave to wave (a comparison between an array's items).
    (r"waves\[\d+\]", r"^give exactly one of percent or count$"),
    (r"waves\[\d+\]\.percent", r"must rise"),
    # At least one of four contact fields; privacy keys unique by one property of the objects.
    (r"(privacy\.)?owner_setting", r"^needs at least one of"),
    (r"(privacy\.)?setting_list\[\d+\]\.privacy_key", r"is listed twice$"),
    # A statement's period: `to` not before `from`, at most 366 days after it (two fields).
    (r"to", r"^(must not be before from|a statement covers at most 366 days)$"),
]


def _unstateable(response) -> list[str] | None:  # type: ignore[no-untyped-def]
    """The `field: message` of each error if every one is an UNSTATEABLE rule, else None."""
    if response.status_code != 400:
        return None
    try:
        errors = (response.json().get("data") or {}).get("errors") or []
    except ValueError:
        return None
    seen = []
    for e in errors:
        field, message = str(e.get("field", "")), str(e.get("message", ""))
        if not any(re.fullmatch(f, field) and re.search(m, message) for f, m in UNSTATEABLE):
            return None
        seen.append(f"{field}: {message}")
    return seen or None


@schemathesis.hook
def filter_failure(context, failure, case, response):  # type: ignore[no-untyped-def]
    """Keeps every failure except a refusal of schema-valid data by an UNSTATEABLE rule."""
    if getattr(failure, "code", None) != "ST202" and type(failure).__name__ != "RejectedPositiveData":
        return True
    excused = _unstateable(response)
    if excused is None:
        return True
    _event("unstateable-rule", f"{case.operation.method.upper()} {case.operation.path}: {'; '.join(excused)}")
    return False


def _names_a_field(response) -> bool:  # type: ignore[no-untyped-def]
    """Whether a 404 is about a record a body field names (data.errors), not the path's."""
    try:
        return response.status_code == 404 and bool(((response.json().get("data") or {}).get("errors")))
    except ValueError:
        return False


@schemathesis.hook("filter_failure")
def keep_resource_failures_about_the_path(context, failure, case, response):  # type: ignore[no-untyped-def]
    """A 404 naming a body field (`partner_id: no such partner`) on an update of a record just
    created says the *field's* record is missing; the created one is there. Every other
    "created resource not found" stays a finding."""
    if getattr(failure, "code", None) == "ST302" and _names_a_field(response):
        _event("field-404", f"{case.operation.method.upper()} {case.operation.path}: {response.text[:120]}")
        return False
    if getattr(failure, "code", None) == "ST302" and case.operation.path in SET_LATER and response.status_code == 404:
        _event("set-later-404", f"{case.operation.method.upper()} {case.operation.path}")
        return False
    return True


# Parts of a record that exist only once set, after the record is created: a 404 for one of a
# record just created is what the interface says (a partner has no share plan until the
# platform sets one), not a created resource gone missing.
SET_LATER = {"/api/v1/partners/{id}/share-plan"}


# ---- integer query parameters at the limits of the integer types ------------------------
#
# A query parameter the document types as an integer may be held in an i32, u32 or i64 on its
# way to the database; a value past one of those limits must be a 400 naming the parameter
# (or an answer as for any other value), never a 500. Hypothesis rarely draws such values, so
# this check sends them itself: the first time a GET of an operation with integer query
# parameters answers 2xx (its path names records that exist), each such parameter is sent
# again with each value below, and any 5xx is a finding. A release campaign over one
# authorised tenant is made first (`_campaign_fixture`), so a campaign's tenant list is among
# the paths that exist.

LIMIT_VALUES = [
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-1",
    "-2147483649",
    "-9223372036854775809",
    "1e30",
]
_probed: set[tuple[str, str]] = set()
_probed_lock = threading.Lock()


def _integer_query_parameters(operation) -> list[str]:  # type: ignore[no-untyped-def]
    names = []
    for p in operation.definition.raw.get("parameters", []):
        schema = p.get("schema") or {}
        types = schema.get("type")
        if p.get("in") == "query" and (types == "integer" or (isinstance(types, list) and "integer" in types)):
            names.append(p["name"])
    return names


@schemathesis.check
def integer_query_limits(ctx, response, case):  # type: ignore[no-untyped-def]
    op = case.operation
    if op.method.upper() != "GET" or not 200 <= response.status_code < 300 or not op.path.startswith("/api/v1/"):
        return None
    names = _integer_query_parameters(op)
    if not names:
        return None
    with _probed_lock:
        if (op.method, op.path) in _probed:
            return None
        _probed.add((op.method, op.path))
    url = f"{BASE_URL}{case.formatted_path}"
    base_query = {k: v for k, v in (case.query or {}).items()}
    for name in names:
        for value in LIMIT_VALUES:
            query = {**base_query, name: value}
            r = ADMIN.http.get(url, params=query, headers={"Authorization": f"Bearer {ADMIN.current()}"}, timeout=30)
            if r.status_code >= 500:
                raise AssertionError(f"GET {case.formatted_path}?{name}={value} answered {r.status_code}: {r.text[:300]}")
    _event("integer-limits", f"GET {op.path}: {', '.join(names)} at {len(LIMIT_VALUES)} limits, no 5xx")
    return None


def _campaign_fixture() -> None:
    """A tenant whose mini-program the sandbox authorises, and a draft campaign over it."""
    http = ADMIN.http
    auth = {"Authorization": f"Bearer {ADMIN.login('fixture')}"}
    r = http.post(f"{BASE_URL}/api/v1/tenants", json={"name": "Fuzz campaign shop"}, headers=auth, timeout=30)
    r.raise_for_status()
    tenant = r.json()["data"]["id"]
    for i in range(100):
        r = http.get(f"{BASE_URL}/api/v1/miniprogram/authorization", params={"tenant_id": tenant}, headers=auth, timeout=30)
        if r.ok and (r.json().get("data") or {}).get("authorize_url"):
            break
        if i == 30:
            http.post(f"{BASE_URL}/sandbox/control/verify-ticket", json={}, timeout=30)
        time.sleep(0.1)
    else:
        raise RuntimeError("the campaign fixture: no authorisation link (no verify ticket arrived)")
    r = http.post(f"{BASE_URL}/sandbox/control/authorize-many", json={"tenant_ids": [tenant]}, timeout=30)
    r.raise_for_status()
    body = {
        "name": "Fuzz campaign",
        "template_id": 1,
        "version": "1.0.0",
        "description": "Fuzz campaign",
        "tenants": {"tenant_ids": [tenant]},
    }
    r = http.post(f"{BASE_URL}/api/v1/miniprogram/campaigns", json=body, headers=auth, timeout=30)
    if r.status_code != 200:
        raise RuntimeError(f"the campaign fixture: creating the campaign answered {r.status_code}: {r.text[:300]}")
    _event("fixture-campaign", f"campaign {r.json()['data']['id']} over tenant {tenant}")


_campaign_fixture()
