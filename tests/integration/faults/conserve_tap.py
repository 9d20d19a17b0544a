#!/usr/bin/env python3
"""A recording pass-through between the conservation check's jobs and the
sidecar's socket (it_conserve.sh). Every push frame a client sends is saved
as FRAMES/<pid>-<sequence>.frame before it is forwarded, and every outcome is
one JSON line in --log: the reply code the client was sent, or that it got no
reply. When the sidecar is down, or dies during a push, the client's
connection is closed without a reply, which is what the sidecar's death looks
like to a client. The tap never answers anything itself.

  conserve_tap.py --listen SOCK --upstream SOCK --frames DIR --log FILE
"""
import argparse
import asyncio
import json
import os
import signal
import struct
import time

import conserve_pb

HDR = 12


async def handle(args, logf, cr, cw):
    ur = uw = None
    try:
        while True:
            try:
                hdr = await cr.readexactly(HDR)
                n = struct.unpack(">I", hdr[8:12])[0]
                payload = await cr.readexactly(n)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            req = conserve_pb.push_request(payload)
            name = "%d-%d.frame" % (req["pid"], req["sequence"])
            tmp = os.path.join(args.frames, "." + name)
            with open(tmp, "wb") as fh:
                fh.write(hdr + payload)
            os.replace(tmp, os.path.join(args.frames, name))
            rec = {"pid": req["pid"], "seq": req["sequence"], "t": time.time()}
            try:
                if uw is None:
                    ur, uw = await asyncio.open_unix_connection(args.upstream)
                uw.write(hdr + payload)
                await uw.drain()
                rh = await asyncio.wait_for(ur.readexactly(HDR), 60)
                rp = await ur.readexactly(struct.unpack(">I", rh[8:12])[0])
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
                rec["code"] = None
                rec["error"] = type(e).__name__
                logf.write(json.dumps(rec) + "\n")
                logf.flush()
                return  # the client sees its connection closed without a reply
            rec["code"] = conserve_pb.push_reply_code(rp)
            try:
                cw.write(rh + rp)
                await cw.drain()
                rec["delivered"] = True
            except (OSError, ConnectionError):
                rec["delivered"] = False
            logf.write(json.dumps(rec) + "\n")
            logf.flush()
            if not rec["delivered"]:
                return
    finally:
        for w in (uw, cw):
            if w is not None:
                w.close()


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--listen", required=True)
    p.add_argument("--upstream", required=True)
    p.add_argument("--frames", required=True)
    p.add_argument("--log", required=True)
    args = p.parse_args()
    os.makedirs(args.frames, exist_ok=True)
    logf = open(args.log, "a")
    srv = await asyncio.start_unix_server(lambda r, w: handle(args, logf, r, w), args.listen,
                                          backlog=1024)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with srv:
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
