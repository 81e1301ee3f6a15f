# The Pendulum toolkit on Debian bookworm: build with the Makefile, then a
# small runtime image with the programs, their manual pages and the shared
# libraries they need. Used by the "app" profile of docker-compose.yml.

FROM debian:bookworm AS build
RUN apt-get update \
	&& apt-get install -y --no-install-recommends \
		make gcc libc6-dev libpq-dev libyaml-dev libjsmn-dev \
	&& rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only the sources: a build/ directory from the host must not leak in.
COPY Makefile VERSION ./
COPY cmd/ cmd/
COPY lib/ lib/
COPY sql/ sql/
COPY scripts/ scripts/
COPY man/ man/
RUN make -j"$(nproc)" B=/tmp/build install PREFIX=/usr/local DESTDIR=/out

FROM debian:bookworm-slim
RUN apt-get update \
	&& apt-get install -y --no-install-recommends libpq5 libyaml-0-2 \
	&& rm -rf /var/lib/apt/lists/*
COPY --from=build /out/usr/local/ /usr/local/
RUN useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin pendulum
USER pendulum
# Migrate (safe to run from many containers at once: migrators take an
# advisory lock), then become the worker so that it receives SIGTERM and
# drains. The arguments are pd-worker's; the default handler serves the
# "echo" job type by returning its payload as the result:
#   pd-enqueue --wait echo '{"hello": "world"}'
ENTRYPOINT ["/bin/sh", "-c", "pd-admin migrate && exec pd-worker \"$@\"", "pd-worker"]
CMD ["--handler", "echo=cat"]
