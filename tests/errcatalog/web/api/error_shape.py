"""The one error shape every 4xx of the API has."""

from __future__ import annotations


def assert_api_error(response, status: int, code: str) -> dict:
    """The one error shape of the API; returns the ``error`` object."""
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert error["status"] == status
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    assert ("fields" in error) == (code == "invalid")
    return error
