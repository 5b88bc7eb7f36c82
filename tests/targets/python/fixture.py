# The Python fixture of integration-python (issue 20). Run by Debian's
# /usr/bin/python3. Its threads, and the Python stacks the tests expect:
#   busy     leaf <- middle <- outer <- Thread.run ...   (on the CPU)
#   sleeper  sleeper <- Thread.run ...                    (time.sleep)
#   blocked  blocked <- Thread.run ...                    (lock.acquire)
#   main     <module>                                     (time.sleep)
# argv[1]: where SIGUSR1 makes faulthandler write every thread's traceback,
# the interpreter's own account, which the tests compare with ours.
import faulthandler
import signal
import sys
import threading
import time

lock = threading.Lock()


def leaf(n):
    x = 0
    while True:
        x += n
        if x > 10**12:
            x = 0


def middle(n):
    leaf(n + 1)


def outer():
    middle(1)


def sleeper():
    time.sleep(3600)


def blocked():
    lock.acquire()


traceback_file = open(sys.argv[1], "w")
faulthandler.register(signal.SIGUSR1, file=traceback_file, all_threads=True)
lock.acquire()
threading.Thread(target=sleeper, name="sleeper").start()
threading.Thread(target=blocked, name="blocked").start()
threading.Thread(target=outer, name="busy").start()
time.sleep(0.2)
print("ready", flush=True)
while True:
    time.sleep(3600)
