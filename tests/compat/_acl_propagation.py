"""``python -m tests.compat._acl_propagation --bootstrap-server A,B,C ... --topic T``:
returns once every broker of the list describes the same ACLs on topic ``T``.

librdkafka's tests 0115 and 0119 run ``kafka-acls.sh`` and produce or fetch at once,
assuming every broker already enforces the new ACL. In Kafka as in minikafka the tool
returns when the controller has committed the change, and each broker applies it a
metadata fetch later; Kafka's JVM brokers do that within milliseconds, minikafka's on a
loaded two-core machine take longer. The suite's ``kafka-acls.sh`` therefore runs
Kafka's AclCommand, then this: the harness waits for the propagation the tests assume,
and the brokers' enforcement is what the tests check.
"""

from __future__ import annotations

import argparse
import sys
import time

from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

DEADLINE = 60.0


def described(broker: str, topic: str) -> set[str] | None:
    """The ACLs ``broker`` describes on ``topic`` (librdkafka sends DescribeAcls to the
    controller its Metadata names, which a minikafka broker names as itself); None if
    it did not answer."""
    admin = AdminClient({"bootstrap.servers": broker, "log_level": 0})
    flt = AclBindingFilter(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    try:
        found: list[AclBinding] = admin.describe_acls(flt, request_timeout=10).result()
    except KafkaException:
        return None
    return {str(b) for b in found}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--topic")
    args, _ = parser.parse_known_args(argv)
    if args.topic is None:
        return 0
    brokers = args.bootstrap_server.split(",")
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        answers = [described(b, args.topic) for b in brokers]
        if None not in answers and all(a == answers[0] for a in answers):
            return 0
        time.sleep(0.1)  # polling the brokers, under DEADLINE
    print(f"the brokers still disagree on {args.topic}'s ACLs", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
