-- The pg_auto_failover monitor's timings (psql -f on the monitor's pg_auto_failover database,
-- then SELECT pg_reload_conf(); tests/ops/test_failover.py applies this file as it is).
--
-- A primary that answers no health check for ~4 s is declared unhealthy and its synchronous
-- standby promoted. The new primary then refuses writes until the old one is known to be
-- demoted, or primary_demote_timeout has passed: that wait is what keeps two primaries from
-- taking writes at once (the old one's keeper demotes itself when it loses the monitor and the
-- standby). Shorter is fewer seconds of 503 and a narrower margin for a partitioned primary
-- to notice; do not go below the keeper's own network timeout.
--
-- The same checks find a lost standby: unhealthy after ~4 s, the primary goes to wait_primary,
-- its keeper empties synchronous_standby_names and the COMMITs waiting for the standby are
-- released. Until then each waits; a server answers 503 past PHARAON_DB_DEADLINE_SECONDS
-- (docs/operations.md, "When the standby is lost").
ALTER SYSTEM SET pgautofailover.health_check_period = 1000;
ALTER SYSTEM SET pgautofailover.health_check_timeout = 1000;
ALTER SYSTEM SET pgautofailover.health_check_max_retries = 2;
ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 500;
ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 4000;
ALTER SYSTEM SET pgautofailover.primary_demote_timeout = 10000;
