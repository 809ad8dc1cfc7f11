# deltabus: a static-ish release binary on a slim Debian runtime.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY config ./config
COPY benches ./benches
COPY tests ./tests
RUN cargo build --release --bin deltabus

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/deltabus /usr/local/bin/deltabus
COPY config /etc/deltabus
ENTRYPOINT ["deltabus"]
CMD ["run", "--config", "/etc/deltabus/docker.toml"]
