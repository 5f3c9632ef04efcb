"""Every page satisfies the Content-Security-Policy: each response carries the policy, with
nothing inline allowed; the rendered pages hold no inline script, style or event handler
(server side here); and in a real browser every page is visited and used (graphs drawn,
panels opened, the budget bar drawn, the API docs expanded, the admin's forms) while every
violation the browser reports is collected."""
import re
import time
from html.parser import HTMLParser

import pytest
from django.contrib.auth.models import User
from django.test import Client
from playwright.sync_api import expect

from executions.models import Evaluation, ThoughtSearch
from executions.services import execution_start
from quality.evaluations import execution_evaluate
from tests.executions.conftest import wait_for
from tests.experiments.core_support import load
from tests.pages.test_compare_page import click_graph_node as click_compared_node
from tests.pages.test_derive_requests import raise_request
from tests.pages.test_evaluations import finished_in_process
from tests.pages.test_execution_browser import click_graph_node
from tests.pages.test_thought_tree import click_tree_node
from tests.pages.test_workflow_editor import click_node
from tests.replay import load_demo
from workflows.models import Blueprint, Workflow

POLICY = {
    "default-src": "'self'", "script-src": "'self'", "style-src": "'self'", "img-src": "'self' data:",
    "connect-src": "'self'", "font-src": "'self'", "object-src": "'none'", "base-uri": "'self'",
    "form-action": "'self'", "frame-ancestors": "'none'",
}
# Script types a browser does not run: data blocks (json_script, Swagger UI's settings).
DATA_BLOCKS = {"application/json", "application/ld+json"}


class InlineCode(HTMLParser):
    """Collects what a policy without 'unsafe-inline' refuses in a page: scripts with code in
    them, <style> blocks, style attributes, on… event handlers and javascript: links."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.script: tuple[int, str] | None = None  # (line, code so far) inside an inline script

    def handle_starttag(self, tag, attrs):
        line = self.getpos()[0]
        values = dict(attrs)
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"line {line}: <{tag} {name}=…> event handler")
            elif name == "style":
                self.problems.append(f"line {line}: <{tag} style=\"{value}\">")
            elif name in ("href", "src", "action") and (value or "").strip().lower().startswith("javascript:"):
                self.problems.append(f"line {line}: <{tag} {name}=\"javascript:…\">")
        if tag == "style":
            self.problems.append(f"line {line}: <style> block")
        if tag == "script" and "src" not in values and (values.get("type") or "").lower() not in DATA_BLOCKS:
            self.script = (line, "")

    def handle_data(self, data):
        if self.script is not None:
            self.script = (self.script[0], self.script[1] + data)

    def handle_endtag(self, tag):
        if tag == "script" and self.script is not None:
            line, code = self.script
            if code.strip():
                self.problems.append(f"line {line}: inline <script>: {code.strip()[:60]!r}")
            self.script = None


def started_experiment():
    """An experiment of the Echo workflow over a small dataset, its first items running."""
    from experiments.experiment_services import experiment_create, experiment_start

    load()
    return experiment_start(experiment=experiment_create(
        workflow_id="echo", dataset="capitals", scorers=[{"type": "contains", "path": "$.nodes.say.response"}]))


def inline_code(html: str) -> list[str]:
    parser = InlineCode()
    parser.feed(html)
    parser.close()
    return parser.problems


def policy_of(response) -> dict[str, str]:
    header = response.get("Content-Security-Policy", "")
    return {name: value.strip() for name, _, value in
            (directive.strip().partition(" ") for directive in header.split(";") if directive.strip())}


def test_it_finds_inline_code_in_html():
    # The checker itself: each kind of inline code is found, and data blocks and files are not.
    assert inline_code("""<script src="/static/js/a.js"></script><script type="application/json">{"a": 1}</script>
        <script id="x" type="application/json">{"onload": "style=1"}</script><a href="/ok">ok</a>""") == []
    found = inline_code("""<p>
        <script>alert(1)</script><script type="module">go()</script><style>p {}</style>
        <span style="width: 3%"></span><button onclick="go()">x</button><a href="javascript:go()">x</a>""")
    assert found == ["line 2: inline <script>: 'alert(1)'", "line 2: inline <script>: 'go()'", "line 2: <style> block",
                     'line 3: <span style="width: 3%">', "line 3: <button onclick=…> event handler",
                     'line 3: <a href="javascript:…">']


@pytest.fixture
def pages_by_user(api, tmp_path, settings, no_tasks):
    """The demo data; a scored run, a Game-of-24 run with its thought tree and a derive
    request, all made in this process; an admin; and the pages each of them opens."""
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)
    thesis = finished_in_process("thesis_reading")
    evaluation = execution_evaluate(execution_pk=thesis.pk)
    game = finished_in_process("game24", numbers=[4, 9, 10, 13])
    search = ThoughtSearch.objects.get(execution=game)
    raise_request(api.author.user)
    admin = User.objects.create_superuser("root", password="a long password")
    release_review = Workflow.objects.get(workflow_id="release_review")
    blueprint = Blueprint.objects.order_by("pk").first()
    experiment = started_experiment()
    return {
        None: ["/login/", "/admin/login/"],
        api.viewer.user: ["/agents/Scholar/edit/", "/no-such-page/"],  # refused (403), not found (404)
        api.author.user: [
            "/", "/agents/", "/agents/Scholar/", "/agents/Scholar/edit/", "/blueprints/",
            f"/blueprints/{blueprint.blueprint_id}/", "/workflows/", "/workflows/new/", "/workflows/release_review/",
            "/executions/", f"/executions/{thesis.execution_id}/", f"/executions/{thesis.execution_id}/?node=task_vault_001",
            "/executions/plan/thesis_reading/task_vault_001/", f"/executions/{game.execution_id}/",
            f"/executions/{game.execution_id}/tot/{search.node_run_id}/",
            f"/executions/compare/?a={thesis.execution_id}&b={thesis.execution_id}", "/derive-requests/",
            "/derive-requests/dr_medicine/", "/evaluations/", f"/evaluations/{evaluation.evaluation_id}/",
            "/evaluations/new/", "/api/docs", "/api/agents", "/datasets/", "/datasets/capitals/", "/experiments/",
            "/experiments/compare/", f"/experiments/{experiment.experiment_id}/", "/experiments/new/?workflow=echo&dataset=capitals",
            "/experiments/evidence/derive-requests/dr_medicine/",
        ],
        admin: [
            "/admin/", "/admin/executions/execution/", "/admin/workflows/workflow/",
            f"/admin/workflows/workflow/{release_review.pk}/change/", "/admin/workflows/workflow/add/",
            "/admin/agents/agent/", f"/admin/auth/user/{admin.pk}/change/", "/admin/auth/user/add/",
            "/experiments/evidence/derive-requests/dr_medicine/",  # with the form that starts the pair
            "/audit/", "/admin/core/auditentry/",
        ],
    }


@pytest.mark.django_db(transaction=True)
def test_it_sends_the_policy_with_every_page_and_no_page_holds_inline_code(pages_by_user):
    responses = []
    for user, paths in pages_by_user.items():
        client = Client()
        if user is not None:
            client.force_login(user)
        responses += [(path, client.get(path)) for path in paths]
    # A form sent without its CSRF token gets Django's refusal page, found by the name 403_csrf.html.
    refused = Client(enforce_csrf_checks=True).post("/login/", {"username": "viewer-user", "password": "x"})
    assert refused.status_code == 403
    responses.append(("POST /login/ without a CSRF token", refused))

    problems = []
    for path, response in responses:
        if response.status_code >= 500 or response.status_code in (301, 302):
            problems.append(f"{path}: answered {response.status_code}")
            continue
        if policy_of(response) != POLICY:
            problems.append(f"{path}: Content-Security-Policy is {response.get('Content-Security-Policy')!r}")
        if "unsafe-" in response.get("Content-Security-Policy", ""):
            problems.append(f"{path}: the policy allows something unsafe")
        if response["Content-Type"].startswith("text/html"):
            problems += [f"{path} {problem}" for problem in inline_code(response.content.decode())]
    assert problems == [], "\n".join(problems)


# Added before any script of the page runs, so that a violation while the page loads counts too.
LISTENER = """
document.addEventListener("securitypolicyviolation", (event) => {
  window.cspViolation(`${event.effectiveDirective} refused ${event.blockedURI || "inline"}`
    + ` at ${event.sourceFile || event.documentURI}:${event.lineNumber}:${event.columnNumber}`
    + (event.sample ? ` (${event.sample})` : ""));
});
"""


HASH = re.compile(r"a hash \('sha256-[^']*'\), ")


def watch_csp(page, violations: list[str]) -> None:
    """Collect every CSP violation of `page` into `violations`, from its event and from the
    console, each with the page's path."""
    path = lambda: re.sub(r"^https?://[^/]+", "", page.url)  # noqa: E731
    page.expose_function("cspViolation", lambda text: violations.append(f"{path()}: {text}"))
    page.add_init_script(LISTENER)
    # (The console says it too, with a hash that differs for each element: left out, one line per kind.)
    page.on("console", lambda message: violations.append(f"{path()}: console: {re.sub(HASH, '', message.text)}")
            if "Content Security Policy" in message.text else None)


def visit(page, path: str, ready: str | None = None) -> None:
    """Open `path`, wait for `ready` (a selector) and for the page to go quiet."""
    page.goto(path)
    if ready:
        page.locator(ready).first.wait_for()
    page.wait_for_load_state("networkidle")


def settle(page) -> None:
    """Let the browser deliver the violations of what was just done before moving on."""
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(200)


def sizes_applied(page) -> bool:
    """Whether every size the server wrote as a data-* attribute is applied to its element."""
    return page.evaluate("""() => [...document.querySelectorAll("[data-width]")].length > 0
        && [...document.querySelectorAll("[data-width]")].every((e) => e.style.width.endsWith("%")
            && parseFloat(e.style.width) === parseFloat(e.dataset.width))
        && [...document.querySelectorAll("[data-depth]")].every((e) => e.style.getPropertyValue("--depth") === e.dataset.depth)""")


def finished(workflow_id: str, author, workers, **input):
    """A demo run taken to success by a real worker, and scored by it."""
    execution = wait_for(execution_start(workflow=Workflow.objects.get(workflow_id=workflow_id), input=input,
                                         actor=author), timeout=90, workers=workers)
    assert execution.status == "success", execution.ended_reason
    evaluation = wait_for_evaluation(execution.execution_id)
    return execution, evaluation


def wait_for_evaluation(execution_id: str) -> Evaluation:
    deadline = time.monotonic() + 60
    while not (evaluation := Evaluation.objects.filter(target_type="execution", target_id=execution_id).first()):
        assert time.monotonic() < deadline, f"{execution_id} was not evaluated"
        time.sleep(0.1)
    return evaluation


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_it_has_every_page_satisfy_the_content_security_policy(browser, live_server, page_for, api,
                                                                demo_with_workers):
    demo_with_workers.start(1)
    thesis, evaluation = finished("thesis_reading", api.author.user, demo_with_workers)
    game, _ = finished("game24", api.author.user, demo_with_workers, numbers=[4, 9, 10, 13])
    search = ThoughtSearch.objects.get(execution=game)
    raise_request(api.author.user)
    admin = User.objects.create_superuser("root", password="a long password")

    # Anonymous: the sign-in pages.
    context = browser.new_context(base_url=live_server.url)
    anonymous = context.new_page()
    violations: list[str] = []
    watch_csp(anonymous, violations)
    visit(anonymous, "/admin/login/", "#login-form")
    visit(anonymous, "/login/", "input[name=username]")
    # The form sent once its CSRF cookie is gone (as after a long while): the refusal page.
    context.clear_cookies()
    anonymous.fill("input[name=username]", "viewer-user")
    anonymous.fill("input[name=password]", "a long password")
    anonymous.click("button[type=submit]")
    expect(anonymous.locator("h1")).to_have_text("Form refused")
    settle(anonymous)
    context.close()

    page = page_for(api.author.user)
    watch_csp(page, violations)
    visit(page, "/", "main h1")
    visit(page, "/agents/", "main table")
    visit(page, "/agents/Scholar/", "#lineage-graph canvas")
    assert sizes_applied(page)
    visit(page, "/agents/Scholar/edit/", "main form")
    visit(page, "/blueprints/", "main table")
    visit(page, f"/blueprints/{Blueprint.objects.order_by('pk').first().blueprint_id}/", "#blueprint-graph canvas")
    visit(page, "/workflows/", "main table")
    visit(page, "/workflows/release_review/", "#cy canvas")

    # The editor: a node, and a mapping that does not parse, so the problem badge is drawn.
    visit(page, "/workflows/new/", "#cy canvas")
    page.wait_for_function("() => document.getElementById('agent-search').placeholder.startsWith('Search')")
    page.fill("[data-field=workflow_id]", "csp_check")
    page.fill("[data-field=name]", "CSP check")
    page.select_option("#editor-panel select", "dag")
    page.fill("#agent-search", "Scholar")
    page.click("#add-node-button")
    page.wait_for_selector("h2:has-text('Node scholar')")
    click_node(page, "scholar")
    page.click("[data-add=outputs]")
    page.fill("[data-mapping=outputs] .mapping-name", "checked")
    page.fill("[data-mapping=outputs] .mapping-value", "$.nodes[")
    expect(page.locator(".node-badge[data-node=scholar]")).to_be_visible()
    settle(page)

    visit(page, "/executions/", "main table")
    # A finished run with a node's panel open: its attempts, and the budget bar drawn.
    visit(page, f"/executions/{thesis.execution_id}/", "#graph canvas")
    click_graph_node(page, "task_vault_001")
    expect(page.locator("#node-panel .attempt[open] .budget .budget-seg").first).to_be_visible()
    expect(page.locator(".tl-bar.success")).to_have_count(3)
    expect(page.locator("#run-evaluation .scorebar.overall")).to_be_visible()
    settle(page)
    visit(page, "/executions/plan/thesis_reading/task_vault_001/", "#plan-budget .budget-limit")

    visit(page, f"/executions/{game.execution_id}/tot/{search.node_run_id}/", "#tt-graph canvas")
    click_tree_node(page, search.tree["search_state"]["best_path"][-1])  # the answer
    settle(page)
    # Two runs compared (here a run with itself), a node's panel open with both budget bars.
    visit(page, f"/executions/compare/?a={thesis.execution_id}&b={thesis.execution_id}", "#graph-b canvas")
    click_compared_node(page, "a", "task_vault_001")
    expect(page.locator("#compare-panel .budget-side .budget .budget-seg").first).to_be_visible()
    settle(page)

    visit(page, "/derive-requests/", "main table")
    visit(page, "/derive-requests/dr_medicine/", "main h1")
    visit(page, "/evaluations/", ".scorebar")
    assert sizes_applied(page)
    visit(page, f"/evaluations/{evaluation.evaluation_id}/", ".formula")
    visit(page, "/evaluations/new/", "main form")

    # An experiment running (its page polls the API), the list, and the form for its workflow.
    experiment = started_experiment()
    visit(page, "/experiments/", "main table")
    assert sizes_applied(page)
    visit(page, f"/experiments/{experiment.experiment_id}/", "#items")
    visit(page, "/experiments/new/?workflow=echo&dataset=capitals", "#id_pin__say")

    # The API docs: Swagger UI drawn, and an operation opened.
    visit(page, "/api/docs", ".opblock-summary")
    page.locator(".opblock-summary").first.click()
    page.locator(".opblock-body").first.wait_for()
    settle(page)
    visit(page, "/not-a-page/")

    admin_page = page_for(admin)
    watch_csp(admin_page, violations)
    visit(admin_page, "/admin/", "#content")
    visit(admin_page, "/admin/executions/execution/", "#result_list")
    visit(admin_page, f"/admin/workflows/workflow/{Workflow.objects.get(workflow_id='release_review').pk}/change/",
          "#content form")
    visit(admin_page, f"/admin/auth/user/{admin.pk}/change/", "#content form")
    visit(admin_page, "/admin/auth/user/add/", "#content form")
    settle(admin_page)

    assert violations == [], "Content-Security-Policy violations:\n" + "\n".join(dict.fromkeys(violations))
