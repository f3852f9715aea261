"""The operator's and the player's use cases, each over an explicit session. No HTTP here.

Each public function works in the session it is given and neither begins, commits nor rolls
back its transaction (at most a savepoint inside it): the caller owns the unit of work. A
refusal is a :class:`~pharaon.service.errors.ServiceError`; after it, or after a database
error, the caller rolls back what the function wrote, unless the function says the refusal's
trace is to be committed (a failed log-in's count). On PostgreSQL a sale is one statement, so a
caller whose connection is in autocommit (the sales desk) has it committed as it returns
(:mod:`pharaon.service.sales`).
"""
