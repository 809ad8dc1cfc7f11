#!/usr/bin/env bash
# Starts Apache Kafka for the tests: one KRaft node (broker and controller) listening on
# 127.0.0.1:$1 (controller on $1 + 1), its data under $2, formatted anew. A second listener
# on $1 + 2 speaks SASL_SSL: SCRAM-SHA-256 and -512 users `ingest` (password `ingest-secret`)
# and `tail` (`tail-secret`), and a certificate for 127.0.0.1 signed by a test CA made here,
# $2/tls/ca.pem. Prints the broker's pid; the caller waits for a metadata answer before
# using it.
#   tools/kafka-broker/start.sh PORT DATA_DIR LIB_DIR LOG_FILE
set -euo pipefail
port=$1 data=$2 lib=$3 log=$4
here=$(cd "$(dirname "$0")" && pwd)
controller=$((port + 1)) secure=$((port + 2))
rm -rf "$data" && mkdir -p "$data/tls"
# The test CA and the broker's certificate (for 127.0.0.1, as clients verify the address).
(
  cd "$data/tls"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 -subj /CN=deltabus-test-ca
  openssl req -newkey rsa:2048 -nodes -keyout broker.key -out broker.csr -subj /CN=127.0.0.1
  printf 'subjectAltName=IP:127.0.0.1\n' >san.ext
  openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 -extfile san.ext -out broker.crt
  cat broker.key broker.crt >broker.pem
) >/dev/null 2>&1
cat >"$data/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$controller
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller,SECURE://127.0.0.1:$secure
advertised.listeners=PLAINTEXT://127.0.0.1:$port,SECURE://127.0.0.1:$secure
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL
sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512
listener.name.secure.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.secure.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.secure.ssl.keystore.type=PEM
listener.name.secure.ssl.keystore.location=$data/tls/broker.pem
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
log.cleaner.backoff.ms=1000
PROPS
users=()
for mechanism in SCRAM-SHA-256 SCRAM-SHA-512; do
  users+=(--add-scram "$mechanism=[name=ingest,password=ingest-secret]")
  users+=(--add-scram "$mechanism=[name=tail,password=tail-secret]")
done
java -cp "$lib/*" kafka.tools.StorageTool format --standalone "${users[@]}" \
  -t "$(java -cp "$lib/*" kafka.tools.StorageTool random-uuid)" -c "$data/server.properties" >"$log" 2>&1
java -Xmx512m -Dlog4j2.configurationFile="$here/log4j2.yaml" -cp "$lib/*" kafka.Kafka "$data/server.properties" \
  >>"$log" 2>&1 &
echo $!
