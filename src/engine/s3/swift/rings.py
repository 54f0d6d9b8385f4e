# Swift's rings for blobbench's throwaway cluster, through swift's own
# RingBuilder (about 1 s; the swift-ring-builder command takes about 25 s for
# three rings). Usage: rings.py DIR REPLICAS account=PORT container=PORT object=PORT
# A first call makes the builders: part power 10, one device per replica
# (d1, d2, ...), each in its own zone, all at 127.0.0.1. Later calls only
# move the devices to new ports, so every object stays where it was placed.
import os
import sys

from swift.common.ring import RingBuilder

etc, replicas = sys.argv[1], int(sys.argv[2])
ports = dict(arg.split("=") for arg in sys.argv[3:])
for kind in ("account", "container", "object"):
    port = int(ports[kind])
    builder_path = os.path.join(etc, kind + ".builder")
    if os.path.exists(builder_path):
        builder = RingBuilder.load(builder_path)
        for dev in builder.devs:
            if dev is not None:
                dev["port"] = port
    else:
        builder = RingBuilder(10, replicas, 1)
        for i in range(replicas):
            builder.add_dev({"id": i, "region": 1, "zone": i + 1, "ip": "127.0.0.1", "port": port,
                             "device": "d%d" % (i + 1), "weight": 100, "meta": ""})
        builder.rebalance(seed=1)
    builder.save(builder_path + ".tmp")
    os.rename(builder_path + ".tmp", builder_path)
    ring_path = os.path.join(etc, kind + ".ring.gz")
    builder.get_ring().save(ring_path + ".tmp")
    os.rename(ring_path + ".tmp", ring_path)
