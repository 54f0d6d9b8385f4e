# Swift's rings for blobbench's throwaway cluster, through swift's own
# RingBuilder (about 1 s; the swift-ring-builder command takes about 25 s for
# three rings). Usage: rings.py DIR SPEC, SPEC being JSON:
#   {"replicas": 3, "devices": [{"device": "d1", "zone": 1, "ip": "127.0.0.1",
#     "ports": {"account": P, "container": P, "object": P}}, ...]}
# A first call makes the builders: part power 10, one device per replica,
# each in its own zone. Later calls only move each device (by its name) to
# its new address and ports, so every object stays where it was placed.
import json
import os
import sys

from swift.common.ring import RingBuilder

etc, spec = sys.argv[1], json.loads(sys.argv[2])
for kind in ("account", "container", "object"):
    builder_path = os.path.join(etc, kind + ".builder")
    if os.path.exists(builder_path):
        builder = RingBuilder.load(builder_path)
        where = {d["device"]: d for d in spec["devices"]}
        for dev in builder.devs:
            if dev is not None and dev["device"] in where:
                dev["ip"] = where[dev["device"]]["ip"]
                dev["port"] = int(where[dev["device"]]["ports"][kind])
    else:
        builder = RingBuilder(10, spec["replicas"], 1)
        for i, d in enumerate(spec["devices"]):
            builder.add_dev({"id": i, "region": 1, "zone": d["zone"], "ip": d["ip"], "port": int(d["ports"][kind]),
                             "device": d["device"], "weight": 100, "meta": ""})
        builder.rebalance(seed=1)
    builder.save(builder_path + ".tmp")
    os.rename(builder_path + ".tmp", builder_path)
    ring_path = os.path.join(etc, kind + ".ring.gz")
    builder.get_ring().save(ring_path + ".tmp")
    os.rename(ring_path + ".tmp", ring_path)
