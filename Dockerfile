# deltabus: a stripped release binary on a slim Debian runtime, run as a non-root user.
#   docker build -t deltabus .
#   docker run --rm -p 9464:9464 -v $PWD/config/docker.toml:/etc/deltabus/deltabus.toml:ro deltabus
FROM rust:1-bookworm AS build
WORKDIR /src
RUN apt-get update && apt-get install -y --no-install-recommends cmake && rm -rf /var/lib/apt/lists/*
# Dependencies first, in a layer of their own: rebuilt only when Cargo.toml or Cargo.lock change.
COPY Cargo.toml Cargo.lock ./
RUN mkdir -p src benches/support \
 && echo 'fn main() {}' > src/main.rs && touch src/lib.rs \
 && for b in snapshot_load write_throughput compact_throughput delete_throughput upsert_throughput ingest_throughput follow_latency; do echo 'fn main() {}' > benches/$b.rs; done \
 && cargo build --release --locked --bin deltabus \
 && rm -rf src benches
COPY src ./src
COPY config ./config
COPY benches ./benches
RUN touch src/main.rs src/lib.rs \
 && cargo build --release --locked --bin deltabus \
 && strip target/release/deltabus

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --no-create-home deltabus
COPY --from=build /src/target/release/deltabus /usr/local/bin/deltabus
COPY config/default.toml /etc/deltabus/default.toml
USER deltabus
# Prometheus metrics and the /health and /ready probes (metrics.addr = "0.0.0.0:9464").
EXPOSE 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD curl -fsS http://127.0.0.1:9464/health || exit 1
ENTRYPOINT ["deltabus"]
CMD ["run", "--config", "/etc/deltabus/deltabus.toml"]
