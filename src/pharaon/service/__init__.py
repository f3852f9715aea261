"""The operator's and the player's use cases, each over an explicit session. No HTTP here.

Each public function is one unit of work: it commits what it did, or raises a
:class:`~pharaon.service.errors.ServiceError` (or lets a database error through) and leaves the
database as it was.
"""
