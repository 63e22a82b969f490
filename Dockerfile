# syntax=docker/dockerfile:1
# One image with Outrigger's three binaries: outrigger (CLI), outrigger-webhook and
# outrigger-controller. The Helm chart runs each Deployment with `command: [<binary>]`.
#   docker build -t ghcr.io/outrigger/outrigger:0.1.0 .
# Node.js 24, as in development (the npm package `node` pins 24.x there; it is not used here).

FROM node:24-bookworm-slim AS build
WORKDIR /src
# The manifests first, so the dependency layer is rebuilt only when they change.
COPY package.json package-lock.json ./
COPY shared/package.json shared/
COPY kube/package.json kube/
COPY webhook/package.json webhook/
COPY controller/package.json controller/
COPY cli/package.json cli/
COPY testkit/package.json testkit/
COPY e2e/package.json e2e/
# --ignore-scripts: the dev dependency `node` would download a second Node.js in its
# preinstall; the image's own Node.js builds and runs everything.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.base.json ./
COPY shared/ shared/
COPY kube/ kube/
# The tests' kit (its tests are ignored): the webhook's and the CLI's projects reference it.
COPY testkit/ testkit/
COPY webhook/ webhook/
COPY controller/ controller/
COPY cli/ cli/
# The image's node, not node_modules/.bin/node (the unused `node` package's shim).
RUN node node_modules/typescript/bin/tsc -b shared kube webhook controller cli \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules/ node_modules/
COPY --from=build /src/shared/package.json shared/
COPY --from=build /src/shared/dist/src/ shared/dist/src/
COPY --from=build /src/kube/package.json kube/
COPY --from=build /src/kube/dist/src/ kube/dist/src/
COPY --from=build /src/webhook/package.json webhook/
COPY --from=build /src/webhook/bin/ webhook/bin/
COPY --from=build /src/webhook/dist/src/ webhook/dist/src/
COPY --from=build /src/controller/package.json controller/
COPY --from=build /src/controller/bin/ controller/bin/
COPY --from=build /src/controller/dist/src/ controller/dist/src/
COPY --from=build /src/cli/package.json cli/
COPY --from=build /src/cli/bin/ cli/bin/
COPY --from=build /src/cli/dist/src/ cli/dist/src/
RUN ln -s /app/cli/bin/outrigger.js /usr/local/bin/outrigger \
 && ln -s /app/webhook/bin/outrigger-webhook.js /usr/local/bin/outrigger-webhook \
 && ln -s /app/controller/bin/outrigger-controller.js /usr/local/bin/outrigger-controller
# Non-root, matching the chart's runAsUser; the root filesystem may be read-only: nothing
# here writes to disk (logs go to stderr, certificates and configuration come from the API).
USER 65532:65532
ENTRYPOINT []
CMD ["outrigger", "--help"]
