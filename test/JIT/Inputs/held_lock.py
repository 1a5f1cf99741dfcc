"""A process waiting for another one's cache lock says so (held-lock.test).

    python3 held_lock.py SELFTEST CACHE_DIR

Compiles one kernel into CACHE_DIR, removes its entry (the lock file stays),
takes the entry's lock as another compiling process would (a POSIX fcntl
record lock, what the JIT takes), starts `SELFTEST compile CACHE_DIR` and
waits until it says it is waiting for the lock: no sleep decides the outcome,
only the order of events. Then it releases the lock and checks that the
waiter compiles and finishes.
"""
import fcntl
import glob
import os
import subprocess
import sys
import time

selftest, cache = sys.argv[1], sys.argv[2]
# Bounds, not delays: reached only when something is broken.
WAIT_FOR_NOTICE_S = 300
WAIT_FOR_EXIT_S = 300

subprocess.run([selftest, "compile", cache], check=True, stdout=subprocess.DEVNULL)
(entry,) = glob.glob(os.path.join(cache, "*.kernel"))
os.remove(entry)
lock_path = entry + ".lock"
lock_file = open(lock_path, "r+b")
fcntl.lockf(lock_file, fcntl.LOCK_EX)
print("holding", os.path.basename(lock_path))
sys.stdout.flush()

stderr_path = os.path.join(cache, "waiter.stderr")
with open(stderr_path, "wb") as stderr:
    waiter = subprocess.Popen([selftest, "compile", cache], stdout=subprocess.PIPE,
                              stderr=stderr, text=True)
deadline = time.monotonic() + WAIT_FOR_NOTICE_S
notice = None
while notice is None and time.monotonic() < deadline and waiter.poll() is None:
    with open(stderr_path) as f:
        notice = next((line for line in f if "waiting for the lock file" in line), None)
    time.sleep(0.05)
if notice is None:
    waiter.kill()
    sys.exit("the waiter never said it waits for the lock; its stderr:\n" + open(stderr_path).read())
print("waiter:", notice.strip())
print("waiter still running:", waiter.poll() is None)
sys.stdout.flush()

fcntl.lockf(lock_file, fcntl.LOCK_UN)
lock_file.close()
out, _ = waiter.communicate(timeout=WAIT_FOR_EXIT_S)
print("waiter exit code:", waiter.returncode)
print("waiter:", out.strip())
print(open(stderr_path).read().strip())
