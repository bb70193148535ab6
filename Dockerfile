# The one image for web, worker and beat (docker-compose.yml picks the command). Production by default: debug is
# off, so a strong SECRET_KEY is required and HTTPS protections are on (README, "Safe defaults").
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    ERRCATALOG_DATA_DIR=/app/var \
    ERRCATALOG_DEBUG=0

RUN pip install --no-cache-dir uv==0.13.8
WORKDIR /app

# Dependencies first, from the lock file, so code changes do not reinstall them.
COPY pyproject.toml uv.lock .python-version ./
RUN uv sync --frozen --no-default-groups --no-install-project

COPY . .
# Static files are collected into the image; WhiteNoise serves them. The key is random and only exists for this
# step (production refuses a known one).
RUN SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
    python manage.py collectstatic --no-input --verbosity 0 \
    && useradd --system --home-dir /app errcatalog \
    && chown -R errcatalog /app/var

USER errcatalog
EXPOSE 8000
# One process, with the same limits as docker-compose.yml's web service (see there); run several containers
# behind deploy/haproxy/haproxy.cfg to scale.
CMD ["uvicorn", "config.asgi:application", "--host=0.0.0.0", "--port=8000", "--http=h11", "--timeout-keep-alive=5", \
     "--h11-max-incomplete-event-size=16384", "--limit-concurrency=1000", "--timeout-graceful-shutdown=20"]
