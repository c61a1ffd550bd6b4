"""nox sessions: tests, fast (the tests not marked slow), lint, docs (the site, strict), bench (the quick sweep). They reuse the current interpreter's
packages (venv_backend="none") because torch is large and already installed by the README."""

import nox

nox.options.sessions = ["lint", "tests"]


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session(venv_backend="none")
def fast(session: nox.Session) -> None:
    """The fast tier for the edit-test loop: every test not marked slow (CI runs them all)."""
    session.run("python", "-m", "pytest", "-m", "not slow", *session.posargs)


@nox.session(venv_backend="none")
def lint(session: nox.Session) -> None:
    session.run("ruff", "check", ".")


@nox.session(venv_backend="none")
def docs(session: nox.Session) -> None:
    """The documentation site into build/site: strict, so a broken link or page fails."""
    session.run("mkdocs", "build", "--strict", *session.posargs)


@nox.session(venv_backend="none")
def bench(session: nox.Session) -> None:
    session.run("harness", "sweep", "configs/quick.toml", *session.posargs)
