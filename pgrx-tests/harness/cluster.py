"""The Python checkers' throwaway servers. The bash harness (harness/clusters.sh) is the one piece
of code that makes and starts a server: this calls its init_cluster, start_cluster, stop_cluster
and port_of, and only reads what they wrote. Needs PG_BIN and PG_CONFIG in the environment (the
scenario that runs the checker sets them)."""
import os
import subprocess
import sys

HARNESS = os.path.dirname(os.path.abspath(__file__))
AS_ROOT = os.geteuid() == 0


def harness(scratch, *args, env=None):
    """Runs one function of the harness (lib.sh sourced) with SCRATCH=scratch; its stdout."""
    run_env = dict(env or os.environ, SCRATCH=scratch)
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", '. "$1/lib.sh"; shift; "$@"', "_", HARNESS, *args],
                       env=run_env, text=True, capture_output=True)
    if r.returncode:
        sys.exit(f"harness {' '.join(args[:2])} failed:\n{r.stdout}{r.stderr}")
    return r.stdout


def as_owner(cmd, env=None, **kw):
    """A command as the clusters' owner (`postgres` when we are root), as the harness's as_pg_owner."""
    if AS_ROOT:
        cmd = ["runuser", "-u", "postgres", "--"] + cmd
    return subprocess.run(cmd, env=env, text=True, capture_output=True, **kw)


class Cluster:
    """A cluster `scratch/name` made by init_cluster (Unix socket in `scratch`, fsync off, UTC) with
    these postgresql.conf lines, not started."""

    def __init__(self, scratch, name, conf=()):
        self.scratch = scratch
        self.name = name
        self.dir = os.path.join(scratch, name)
        self.log = self.dir + ".log"
        harness(scratch, "init_cluster", name, *conf)
        self.port = int(harness(scratch, "port_of", name).strip())

    def append_conf(self, lines):
        """More postgresql.conf lines (the last of a setting wins, as PostgreSQL reads them)."""
        as_owner(["sh", "-c", f"cat >> '{self.dir}/postgresql.conf'"], input="\n".join(lines) + "\n", check=True)
        self.port = int(harness(self.scratch, "port_of", self.name).strip())

    def write_file(self, name, text, mode="600"):
        """A file in the data directory, owned by the clusters' owner."""
        path = os.path.join(self.dir, name)
        as_owner(["sh", "-c", f"cat > '{path}' && chmod {mode} '{path}'"], input=text, check=True)

    def start(self, env=None):
        """start_cluster; `env` is the server's environment (PGSERVICEFILE, say)."""
        harness(self.scratch, "start_cluster", self.name, env=env)

    def stop(self):
        harness(self.scratch, "stop_cluster", self.name)

    def remove(self):
        self.stop()
        as_owner(["rm", "-rf", self.dir], check=True)
