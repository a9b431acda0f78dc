# kube-pysched container image: the scheduler only (no build tools), running as non-root.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY scheduler ./scheduler
COPY controller ./controller
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
COPY --from=build /install /usr/local
USER 65532:65532
EXPOSE 10259
ENTRYPOINT ["kube-pysched"]
CMD ["--config", "/etc/kube-pysched/config.yaml", "--leader-elect=true"]
