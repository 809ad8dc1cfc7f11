#!/usr/bin/env bash
# Starts Apache Kafka for the tests: one KRaft node (broker and controller) listening on
# 127.0.0.1:$1 (controller on $1 + 1), its data under $2, formatted anew. Prints the broker's
# pid; the caller waits for a metadata answer before using it.
#   tools/kafka-broker/start.sh PORT DATA_DIR LIB_DIR LOG_FILE
set -euo pipefail
port=$1 data=$2 lib=$3 log=$4
here=$(cd "$(dirname "$0")" && pwd)
controller=$((port + 1))
rm -rf "$data" && mkdir -p "$data"
cat >"$data/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$controller
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$data/logs
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
group.consumer.min.session.timeout.ms=3000
group.consumer.session.timeout.ms=6000
group.consumer.min.heartbeat.interval.ms=500
group.consumer.heartbeat.interval.ms=500
auto.create.topics.enable=true
log.retention.check.interval.ms=1000
PROPS
java -cp "$lib/*" kafka.tools.StorageTool format --standalone \
  -t "$(java -cp "$lib/*" kafka.tools.StorageTool random-uuid)" -c "$data/server.properties" >"$log" 2>&1
java -Xmx512m -Dlog4j2.configurationFile="$here/log4j2.yaml" -cp "$lib/*" kafka.Kafka "$data/server.properties" \
  >>"$log" 2>&1 &
echo $!
