# class: network
# tries: connect to the test's TCP listener on 127.0.0.1
# expect: refused SandboxError

from sage.npu.ascendc import *
import socket


def forward(x, canary, port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"escaped")
    return empty_like(x)
