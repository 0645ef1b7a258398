"""Schemathesis hooks for test/production/fuzz.test.ts (loaded with SCHEMATHESIS_HOOKS=schemathesis_hooks).

Generated Idempotency-Key values repeat across cases ("0", "AAAA", ...). The API answers a key reused for
another request with 422 idempotency_key_reused -- rightly, but such a request never reaches validation or
its handler, and most POST cases of the coverage phase then tested only that. So a valid key is made
specific to its request: a digest of method, path, query and body is appended. The same request still
carries the same key (replays stay exercised); another request gets another key. Only schema-valid cases
are touched: a negative case is sent exactly as generated (Schemathesis re-validates an edited case, and
an edited "missing Authorization" case would count as valid and be sent with the key again). Empty keys
(no key) are left alone too.
"""

import hashlib
import json

import schemathesis

MAX_KEY_LENGTH = 255
DIGEST_LENGTH = 16


def _digest(case) -> str:
    request = [case.method, case.formatted_path, case.query, case.body if isinstance(case.body, (dict, list, str, int, float, bool)) else None]
    return hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()[:DIGEST_LENGTH]


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return
    headers = case.headers
    key = headers.get("Idempotency-Key") if headers else None
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
        return
    headers["Idempotency-Key"] = f"{key[: MAX_KEY_LENGTH - DIGEST_LENGTH - 1]}-{_digest(case)}"
