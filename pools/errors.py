"""The exception tree shared by every poolplan package.

`InputError` (bad file, field, option or policy conflict) maps to exit code 2;
`InfeasibleError` (no plan meets the policy) maps to exit code 1.
"""

__all__ = ["PoolplanError", "InputError", "InfeasibleError"]


class PoolplanError(Exception):
    """Base of every error poolplan raises on purpose."""


class InputError(PoolplanError):
    """A file, field, option or policy is malformed or contradictory (exit code 2).

    The message names the file, line or key and what was expected.
    """


class InfeasibleError(PoolplanError):
    """No plan satisfies the policy (exit code 1).

    ``brokers_to_add`` says how many brokers each pool lacks, like Cruise Control's
    ProvisionRecommendation.
    """

    def __init__(self, message: str, brokers_to_add: dict[str, int] | None = None) -> None:
        super().__init__(message)
        self.brokers_to_add = dict(brokers_to_add or {})
