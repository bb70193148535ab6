# The one image for web, worker and beat (docker-compose.yml picks the command).
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    ERRCATALOG_DATA_DIR=/app/var

RUN pip install --no-cache-dir uv==0.13.8
WORKDIR /app

# Dependencies first, from the lock file, so code changes do not reinstall them.
COPY pyproject.toml uv.lock .python-version ./
RUN uv sync --frozen --no-dev --no-install-project

COPY . .
# Static files are collected into the image; WhiteNoise serves them. The key only exists for this step.
RUN SECRET_KEY=collectstatic-only ERRCATALOG_DEBUG=0 python manage.py collectstatic --no-input --verbosity 0 \
    && useradd --system --home-dir /app errcatalog \
    && chown -R errcatalog /app/var

USER errcatalog
EXPOSE 8000
CMD ["uvicorn", "config.asgi:application", "--host", "0.0.0.0", "--port", "8000"]
