"""`archive.ObjectStoreArchive`'s own rule: an existing object is recognised by the store's status, never by
an error's text. (Everything else it does is `ArchiveBase`'s, tested on every backend in test_archive_base.)"""

from __future__ import annotations


def test_an_existing_object_is_recognised_by_status_never_by_text() -> None:
    """A path holds SHA-256 digests, so "412" in an error's text says nothing (issue 16, item 5)."""
    import errno

    from archive.object_store import _already_exists

    class ClientError(Exception):
        def __init__(self, response: dict) -> None:
            super().__init__("An error occurred")
            self.response = response

    def wrapped(cause: BaseException) -> OSError:  # as s3fs translates an unknown code: EINVAL, cause set
        exc = OSError(errno.EINVAL, "At least one of the pre-conditions you specified did not hold")
        exc.__cause__ = cause
        return exc

    digest_path = "bucket/3f4120ab/c412e9.json"
    assert not _already_exists(OSError(errno.EINVAL, f"write failed: {digest_path} (HTTP 412?)"))
    assert not _already_exists(RuntimeError(f"PreconditionFailed at {digest_path}"))
    assert not _already_exists(wrapped(ClientError({"Error": {"Code": "SlowDown"},
                                                    "ResponseMetadata": {"HTTPStatusCode": 503}})))
    assert _already_exists(FileExistsError(digest_path))
    assert _already_exists(OSError(errno.EEXIST, "exists"))
    assert _already_exists(wrapped(ClientError({"Error": {"Code": "PreconditionFailed"}})))
    assert _already_exists(wrapped(ClientError({"Error": {}, "ResponseMetadata": {"HTTPStatusCode": 412}})))
    status = RuntimeError("precondition")
    status.status = 412  # type: ignore[attr-defined]
    assert _already_exists(wrapped(status))
