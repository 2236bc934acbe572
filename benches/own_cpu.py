#!/usr/bin/env python3
"""Runs a command and prints "wall user sys" for the command's process alone: its
CPU is the user and system seconds of all its threads, not of its children.

Why not GNU time: its user and system times include every waited-for descendant,
so a flood's figure would include the agent that writes the flood, and subtracting
the generator run alone undercounts the generator (writing into a pipe that ralph
reads costs it more than writing to /dev/null). Here the process is waited for
without being reaped (waitid with WNOWAIT), its own times are read from the
zombie's /proc/PID/stat (all its threads, none of its children), and then it is
reaped. (Its peak RSS from wait4 would include python's: a forked child's peak
survives its exec, so run.sh takes the RSS from GNU time in a run of its own.)

Usage: own_cpu.py OUT_FILE COMMAND [ARGS...]   (the figures go to OUT_FILE; the
command's stdin, stdout and stderr are inherited, so nothing it prints can mix in)
"""

import os
import sys
import time


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out, argv = sys.argv[1], sys.argv[2:]
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    wall = time.monotonic() - start
    with open(f"/proc/{pid}/stat") as f:
        # The command name may hold spaces: the fields start after its ')'.
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    user, sys_ = int(fields[11]) / ticks, int(fields[12]) / ticks
    os.waitpid(pid, 0)
    with open(out, "w") as f:
        f.write(f"{wall:.2f} {user:.2f} {sys_:.2f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
