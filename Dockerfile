# The Vigie container image (docs/operations.md#container-image).
#
#   docker build -t vigie .
#   docker run -p 8080:8080 -v vigie:/var/lib/vigie -e VIGIE_PUBLIC_URL=https://vigie.example.org vigie
#
# BASE is the image both stages start from: any Debian-based image with Node.js 20 (node, npm and
# the Node.js headers under /usr/local, as the official image has them). BUILD_BASE, the build
# stage's, defaults to it; an image with python3, make and g++ already in it spares the build stage
# installing them. The runtime stage adds no compiler to BASE.
ARG BASE=node:20-bookworm-slim
ARG BUILD_BASE=${BASE}

FROM ${BUILD_BASE} AS build
# better-sqlite3 compiles its native module when no prebuilt binary can be downloaded.
RUN if ! command -v python3 >/dev/null || ! command -v make >/dev/null || ! command -v g++ >/dev/null; then \
      apt-get update && apt-get install -y --no-install-recommends python3 make g++ && \
      rm -rf /var/lib/apt/lists/*; \
    fi
ENV NPM_CONFIG_UPDATE_NOTIFIER=false
WORKDIR /opt/vigie
# The dependencies first, in a layer of their own that a change of the sources does not rebuild:
# without the install scripts, since `prepare` would build sources not yet copied, then with them
# (JOBS=max: node-gyp, when it compiles, uses every core).
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund && JOBS=max npm rebuild --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json tsconfig.browser.json ./
COPY scripts/build-browser.mjs scripts/build-server.mjs scripts/cli-launcher.mjs scripts/
COPY proto proto/
COPY src src/
# Build, then drop the development dependencies: what is left is `npm ci --omit=dev`'s tree, less
# the sources and intermediate files of a native build (better-sqlite3 loads its one .node file).
RUN npm run build && npm prune --omit=dev --no-audit --no-fund && \
    cd node_modules/better-sqlite3 && mv build/Release/better_sqlite3.node . && \
    rm -rf build deps src && mkdir -p build/Release && mv better_sqlite3.node build/Release/

FROM ${BASE}
ARG BASE
ARG VERSION=""
ARG REVISION=""
ARG CREATED=""
LABEL org.opencontainers.image.title="Vigie" \
      org.opencontainers.image.description="A self-hosted toolkit for small infrastructures: comments, healthchecks, event streams and a user registry behind one HTTP port." \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.base.name="${BASE}"

# A system user of its own; the files of the application stay root's, read-only to it.
RUN groupadd --system --gid 10001 vigie && \
    useradd --system --uid 10001 --gid vigie --home-dir /var/lib/vigie --no-create-home \
      --shell /usr/sbin/nologin vigie && \
    mkdir -p /var/lib/vigie /etc/vigie && chown vigie:vigie /var/lib/vigie && chmod 700 /var/lib/vigie
WORKDIR /opt/vigie
COPY --from=build /opt/vigie/package.json ./
COPY --from=build /opt/vigie/dist dist/
COPY --from=build /opt/vigie/proto proto/
COPY --from=build /opt/vigie/node_modules node_modules/
COPY LICENSE ./
# `vigie init` writes the meaning of every key from this page beside it.
COPY docs/configuration.md docs/
COPY deploy/image/healthcheck.mjs deploy/image/
COPY deploy/image/vigie /usr/local/bin/vigie

# A container is reached from outside: listen on every address and require a registry token for
# the healthcheck and stream APIs. Set VIGIE_PUBLIC_URL to the address clients use.
ENV NODE_ENV=production \
    VIGIE_HTTP_HOST=0.0.0.0 \
    VIGIE_DATABASE_URL=sqlite:/var/lib/vigie/vigie.db \
    VIGIE_REQUIRE_TOKEN=true

USER vigie:vigie
WORKDIR /var/lib/vigie
VOLUME /var/lib/vigie
EXPOSE 8080
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD ["node", "/opt/vigie/deploy/image/healthcheck.mjs"]
ENTRYPOINT ["vigie"]
CMD ["serve"]
