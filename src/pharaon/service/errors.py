"""What a use case refuses, with a stable code the web layer maps to an HTTP status."""

from __future__ import annotations


class ServiceError(Exception):
    """A refused request: ``code`` is machine-readable, ``detail`` says what and why."""

    code = "bad_request"

    def __init__(
        self, detail: str, *, code: str | None = None, fields: dict[str, str] | None = None
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        # Said beside ``detail`` in the answer, for a page to show in its own words.
        self.fields = fields or {}
        if code is not None:
            self.code = code


class BadRequestError(ServiceError):
    code = "bad_request"


class InvalidError(ServiceError):
    code = "validation_error"


class UnauthorizedError(ServiceError):
    code = "unauthorized"


class ForbiddenError(ServiceError):
    code = "forbidden"


class UnderageError(ForbiddenError):
    code = "underage"


class SelfExcludedError(ForbiddenError):
    code = "self_excluded"


class SuspendedError(ForbiddenError):
    """An operator stopped the player's play and deposits (service/measures.py)."""

    code = "suspended"


class IdentityUnverifiedError(ForbiddenError):
    """A withdrawal from an account whose identity no operator has checked yet (provisional)."""

    code = "identity_unverified"


class AccountClosedError(ForbiddenError):
    """A log-in to a closed account, with the right password."""

    code = "account_closed"


class DepositLimitReachedError(ForbiddenError):
    code = "deposit_limit"


class LossLimitReachedError(ForbiddenError):
    code = "loss_limit"


class StakeLimitReachedError(ForbiddenError):
    """A stake that would pass a stake limit in force (24 h, 7 or 30 days)."""

    code = "stake_limit"


class ModeratorsRequiredError(ForbiddenError):
    """A deposit or a stake before the player has set the moderators (a weekly deposit
    ceiling and a weekly stake ceiling)."""

    code = "moderators_required"


class NotFoundError(ServiceError):
    code = "not_found"


class NotRevealedError(NotFoundError):
    """A block whose keys are not published (yet): service/revealed_keys.py."""

    code = "not_revealed"


class ConflictError(ServiceError):
    code = "conflict"


class EmailTakenError(ConflictError):
    code = "email_taken"


class IdempotencyConflictError(ConflictError):
    code = "idempotency_conflict"


class InsufficientFundsError(ServiceError):
    code = "insufficient_funds"


class LockedOutError(ServiceError):
    code = "locked_out"


class SoldOutError(ServiceError):
    code = "sold_out"


class BlockRefusedError(ServiceError):
    """An operator's block file that cannot be loaded."""

    code = "block_refused"


class VerificationFailedError(ConflictError):
    """An approval of a block whose verification of its stored units failed."""

    code = "verification_failed"
