"""Apache Kafka on the bench: the real broker, its Java clients and its tools, run beside
minikafka by the tests and the benchmarks (never by the broker, ``make run`` or the book's
reader build).

``reference/pom.xml`` pins the release; ``scripts/bootstrap.sh reference`` copies its jars
into ``reference/.cache/libs`` once. :mod:`reference.kafka` runs any of Kafka's tool
classes with ``java -cp`` and starts a KRaft combined node on free ports;
:mod:`reference.cluster` starts a controller and three brokers of one cluster;
:mod:`reference.java` compiles and runs the tests' small Java programs against either.
"""
