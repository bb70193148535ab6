"""Examples of each API operation's request and answer, for the OpenAPI document and Swagger UI's "Try it out".

Each request example is accepted as it stands by an instance with the default catalog loaded (a test sends every
one): creates name rows the default catalog does not have, and changes name rows it does (a PUT or PATCH of a hint
or rule still needs that row's id, which only the instance knows). An outcome's ``ts`` must lie within the last
seven days, so the document gets the current time when it is generated (``schema.api_schema_corrections``).
The answers are what those requests get back, shortened where a list would run long.
"""

from __future__ import annotations

import json
from typing import Any

from drf_spectacular.utils import OpenApiExample

# The fields the example of a new code and the PUT of an existing one share.
_INVOICE_LOCKED: dict[str, Any] = {
    "code": "INVOICE_LOCKED",
    "category": "client",
    "kind": "error",
    "retryable": False,
    "retry_after_seconds": None,
    "http_statuses": [409],
    "jsonrpc_code": -31409,
    "system": False,
    "doc_url": "",
    "explanation": "The billing service refuses changes to an invoice that has been sent. A sent invoice is "
    "corrected with a credit note, not edited.",
    "setup_url": "",
    "action_required": "",
    "optional_parameters": [],
    "guidance": "",
    "active": True,
    "allocation": "fixed",
    "allocation_frozen": False,
}
_INVOICE_LOCKED_VARIANT: dict[str, Any] = {
    "name": "default",
    "locale": "",
    "weight": 100,
    "header": "Input Error",
    "message": "This invoice has already been sent, so it can no longer be changed.",
    "cause": "Sent invoices are locked in the billing service.",
    "instruction": "Tell the user the invoice is locked, and offer to create a credit note instead.",
    "question": "",
    "active": True,
}
_UPDATED_AT = "2026-11-26T09:30:00.000000Z"

# The default catalog's RATE_LIMIT as shipped, its variant reworded.
_RATE_LIMIT: dict[str, Any] = {
    "code": "RATE_LIMIT",
    "category": "rate_limit",
    "kind": "error",
    "retryable": True,
    "retry_after_seconds": 30,
    "http_statuses": [429],
    "jsonrpc_code": -31429,
    "system": False,
    "doc_url": "",
    "explanation": "The service answered 429 Too Many Requests (ApiRateLimitError in Sentry's error-handling "
    "conventions), or a client reached errcatalog's own per-client limit. The request is valid but has to wait: as "
    "long as the Retry-After header says when the service sends one, otherwise this code's retry-after setting (30 "
    "seconds). Batch or slow down calls; if it happens often, raise the quota or the limit. Not captured in Sentry.",
    "setup_url": "",
    "action_required": "",
    "optional_parameters": [],
    "guidance": "",
    "active": True,
    "allocation": "fixed",
    "allocation_frozen": False,
    "variants": [
        {
            "name": "default",
            "locale": "",
            "weight": 100,
            "header": "Input Error",
            "message": "Rate limit reached: the service is asking for a pause before the next request.",
            "cause": "Too many requests were sent to it in a short time; the request itself is fine.",
            "instruction": "Tell the user there will be a short delay, and do not retry for at least {retry_after} "
            "seconds.",
            "question": "",
            "active": True,
        }
    ],
}

_HINT: dict[str, Any] = {
    "tool": "send_invoice",
    "parameter": "customer_id",
    "description": "the customer's ID in the billing service",
    "parameter_type": "customer_id",
    "example": "cus_4QX7",
    "question": "Question: Which customer should I send this invoice to? Please provide their customer ID.",
}
# The default catalog's hint for send_email's "to", with its question reworded.
_SEND_EMAIL_TO: dict[str, Any] = {
    "tool": "send_email",
    "parameter": "to",
    "description": "the recipient's email address",
    "parameter_type": "email_address",
    "example": "user@domain.com",
    "question": "Question: Who should I send this email to? Please give me their email address.",
}

_RULE: dict[str, Any] = {
    "position": 250,
    "code": "NOT_FOUND",
    "exception": "",
    "status_min": None,
    "status_max": None,
    "jsonrpc_code": None,
    "upstream": "files",
    "tool": "files__read_file",
    "transport": "",
    "kind": "tool_error",
    "pattern": "^ENOENT: ",
    "active": True,
    "note": "The files server's read_file says ENOENT when the path does not exist.",
}
# The default catalog's rule for HTTP 429, narrowed to one upstream.
_RULE_429: dict[str, Any] = {
    "position": 180,
    "code": "RATE_LIMIT",
    "exception": "",
    "status_min": 429,
    "status_max": 429,
    "jsonrpc_code": None,
    "upstream": "",
    "tool": "",
    "transport": "",
    "kind": "",
    "pattern": "",
    "active": True,
    "note": "Any service's 429 Too Many Requests.",
}


def _request(summary: str, value: Any, description: str = "") -> OpenApiExample:
    return OpenApiExample(summary, value=value, description=description, request_only=True)


def _answer(summary: str, value: Any, status: int = 200) -> OpenApiExample:
    return OpenApiExample(summary, value=value, response_only=True, status_codes=[str(status)])


CODE_CREATE = [
    _request(
        "A code for a locked invoice",
        {**_INVOICE_LOCKED, "variants": [_INVOICE_LOCKED_VARIANT]},
        "A tool of a billing service raises INVOICE_LOCKED (ToolError with code=...) or answers HTTP 409.",
    ),
    _answer(
        "The code as stored",
        {
            **_INVOICE_LOCKED,
            "updated_at": _UPDATED_AT,
            "variants": [{**_INVOICE_LOCKED_VARIANT, "updated_at": _UPDATED_AT}],
        },
        201,
    ),
]
CODE_UPDATE = [
    _request("RATE_LIMIT with its variant reworded", _RATE_LIMIT, "Send it to /api/v1/codes/RATE_LIMIT/."),
    _answer(
        "The code as stored",
        {
            **_RATE_LIMIT,
            "updated_at": _UPDATED_AT,
            "variants": [{**_RATE_LIMIT["variants"][0], "updated_at": _UPDATED_AT}],
        },
    ),
]
CODE_PARTIAL_UPDATE = [
    _request("Wait a minute after a rate limit", {"retry_after_seconds": 60}, "Send it to /api/v1/codes/RATE_LIMIT/."),
    _request(
        "A second variant to compare",
        {
            "variants": [
                {
                    "name": "brief",
                    "weight": 50,
                    "header": "Input Error",
                    "message": "Too many requests for now.",
                    "instruction": "Wait {retry_after} seconds before calling this tool again.",
                }
            ]
        },
        "Adds a variant to /api/v1/codes/RATE_LIMIT/ and keeps the others.",
    ),
    _answer(
        "The code as stored",
        {
            **_RATE_LIMIT,
            "retry_after_seconds": 60,
            "updated_at": _UPDATED_AT,
            "variants": [{**_RATE_LIMIT["variants"][0], "updated_at": _UPDATED_AT}],
        },
    ),
]

HINT_CREATE = [
    _request("How to ask for an invoice's customer", _HINT),
    _answer("The hint as stored", {"id": 42, **_HINT, "updated_at": _UPDATED_AT}, 201),
]
HINT_UPDATE = [
    _request("send_email's recipient, reworded", _SEND_EMAIL_TO, "Send it to the id of the hint for send_email's to."),
    _answer("The hint as stored", {"id": 7, **_SEND_EMAIL_TO, "updated_at": _UPDATED_AT}),
]
_SHORTER_QUESTION = "Question: Who should I send this email to? Please provide the recipient's email address."
HINT_PARTIAL_UPDATE = [
    _request(
        "A shorter question", {"question": _SHORTER_QUESTION}, "Send it to the id of the hint for send_email's to."
    ),
    _answer(
        "The hint as stored", {"id": 7, **_SEND_EMAIL_TO, "question": _SHORTER_QUESTION, "updated_at": _UPDATED_AT}
    ),
]

RULE_CREATE = [
    _request(
        "A missing file on one upstream is NOT_FOUND",
        _RULE,
        "Tried in position order: the first rule whose every condition holds chooses the code.",
    ),
    _answer("The rule as stored", {"id": 58, **_RULE}, 201),
]
RULE_UPDATE = [
    _request("The 429 rule, noted", _RULE_429, "Send it to the id of the rule at position 180."),
    _answer("The rule as stored", {"id": 24, **_RULE_429}),
]
RULE_PARTIAL_UPDATE = [
    _request("Switch a rule off", {"active": False}, "Send it to the id of a rule; a rule switched off is skipped."),
    _answer("The rule as stored", {"id": 24, **_RULE_429, "active": False}),
]

_QUESTION = "Question: Who should I send this email to? Please provide the recipient email address."
_NEEDS_INPUT: dict[str, Any] = {
    "kind": "needsInput:v1",
    "code": "MISSING_PARAMETER",
    "message": _QUESTION,
    "retryable": True,
    "details": {
        "retry_capable": True,
        "error_category": "missing_parameter",
        "required_parameter": "to",
        "parameter_type": "email_address",
        "tool_name": "send_email",
    },
}

RENDER = [
    _request(
        "A missing recipient, as an MCP tool result",
        {
            "code": "MISSING_PARAMETER",
            "tool_name": "send_email",
            "parameters": [{"name": "to", "problem": "missing"}],
            "face": "tool_result",
            "format": "both",
        },
    ),
    _request(
        "A rate limit, as OpenAI's function_call_output",
        {
            "code": "RATE_LIMIT",
            "tool_name": "search_orders",
            "retry_after": 30,
            "face": "provider",
            "provider": "openai",
            "call_id": "call_abc123",
        },
    ),
    _request(
        "An unsaved wording, previewed",
        {
            "code": "NOT_FOUND",
            "tool_name": "get_invoice",
            "face": "markdown",
            "draft": {"message": "No invoice has this number.", "instruction": "Ask the user for the number again."},
        },
    ),
    _answer(
        "A question as an MCP tool result (format both)",
        {
            "code": "MISSING_PARAMETER",
            "variant": "default",
            "locale": "",
            "interactive": True,
            "output": {
                "content": [
                    {"type": "text", "text": _QUESTION, "mimeType": "text/markdown"},
                    {"type": "text", "text": json.dumps(_NEEDS_INPUT, indent=2), "mimeType": "application/json"},
                ],
                "structuredContent": _NEEDS_INPUT,
                "isError": True,
            },
        },
    ),
]

CLASSIFY = [
    _request(
        "An upstream tool's missing file",
        {
            "upstream": "files",
            "tool": "files__read_file",
            "kind": "tool_error",
            "text": "ENOENT: no such file or directory, open '/data/reports/2026-q3.csv'",
        },
        "The text chooses the code by the rules' patterns; it is never sent back.",
    ),
    _request("An HTTP 429 from a service", {"status_code": 429, "upstream": "billing"}),
    _request("A timed-out call", {"exception": ["ReadTimeout", "TimeoutException", "Exception"]}),
    _answer(
        "The code the rules chose",
        {
            "code": "NOT_FOUND",
            "category": "not_found",
            "kind": "error",
            "retryable": False,
            "system": False,
            "classified": True,
        },
    ),
]

OUTCOMES = [
    _request(
        "A failed call and its successful retry",
        {
            "events": [
                {
                    "id": "0d6c8f7e-3b1a-4c2e-9f4d-6a5b2c1d0e9f",
                    "ts": 0,
                    "tool": "send_email",
                    "outcome": "error",
                    "client": "claude-desktop",
                    "session": "s-8f2a",
                    "code": "MISSING_PARAMETER",
                    "variant": "default",
                    "interactive": True,
                    "latency_ms": 41.5,
                },
                {
                    "id": "7e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b",
                    "ts": 0,
                    "tool": "send_email",
                    "outcome": "ok",
                    "client": "claude-desktop",
                    "session": "s-8f2a",
                    "latency_ms": 212.0,
                },
            ]
        },
        "Sent with a token created with outcome reporting rights.",
    ),
    _answer("Both events taken", {"accepted": 2}, 202),
]
