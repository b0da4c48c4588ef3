"""The exception tree shared by every poolplan package.

`InputError` (bad file, field, option or policy conflict) maps to exit code 2;
`InfeasibleError` (no plan meets the policy) maps to exit code 1; `SolverError` (a solver returned a result
that fails its post-conditions) and `JobError` (a compute job died: out of memory, a lost executor, a dead
JVM) map to exit code 3, a failure that is not the input's fault.
"""

__all__ = ["PoolplanError", "InputError", "InfeasibleError", "SolverError", "JobError"]


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


class BrokersToBuy(InfeasibleError):
    """The plan is complete, but onto brokers still to buy (exit code 1): ``brokers_to_add`` per pool.

    Not a refusal: plan.json places replicas on those brokers (its ``planned_brokers``), so the console says
    "brokers to buy:", not "infeasible:".
    """


class SolverError(PoolplanError):
    """A MILP solver returned a result that breaks the model's post-conditions (exit code 3).

    The message says which condition failed; the plan is not written.
    """


class JobError(PoolplanError):
    """A compute job (Spark) or a Kafka tool failed for a reason that is not the input's (exit code 3).

    The message is one line: the cause (out of memory, a lost executor, a dead JVM …), what to change
    (a memory setting, ``--master``, the input size) and the log file that holds the job's own output.
    Nothing of the user's is changed and no output is half-written.
    """
