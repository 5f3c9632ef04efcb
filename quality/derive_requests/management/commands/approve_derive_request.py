"""`python manage.py approve_derive_request ID --user NAME [--reject] [--comment TEXT] [--evidence EXPERIMENT] [--wait S]`

Approves (or with --reject, rejects) a pending derive request as the user NAME, who must
hold the approver role. On approval a Celery worker creates the child agent; when no
worker has done so within --wait seconds, it is created here (the creation is the same
service, and happens once whoever gets there first). --evidence names the child experiment
of the request's parent-vs-child pair: the pair's figures are recorded with the decision (an
experiment of another request, or one not ended, is refused). Prints the request as JSON.
Exit 0 when done, 1 when refused (no permission, or not pending), 2 on bad input.
"""
import json
import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from agents.models import DeriveRequest
from core.errors import SwitchyardError
from quality.derive_requests import selectors, services
from quality.derive_requests.child_agent import derive_request_create_child

BAD_INPUT, REFUSED = 2, 1


class Command(BaseCommand):
    help = "Approve or reject a pending derive request as a user with the approver role; prints it as JSON."

    def add_arguments(self, parser):
        parser.add_argument("derive_request_id")
        parser.add_argument("--user", required=True, help="the username to act as (an approver)")
        parser.add_argument("--reject", action="store_true", help="reject instead of approving")
        parser.add_argument("--comment", default="", help="why, recorded with the decision")
        parser.add_argument("--evidence", default=None, metavar="EXPERIMENT",
                            help="the request's child experiment the decision rests on (recorded with it)")
        parser.add_argument("--wait", type=float, default=5.0,
                            help="seconds to wait for a worker to create the child agent (default 5)")

    def handle(self, *args, derive_request_id, user, reject, comment, evidence, wait, **options):
        actor = get_user_model().objects.filter(username=user, is_active=True).first()
        if actor is None:
            raise CommandError(f"--user: no active user '{user}'", returncode=BAD_INPUT)
        request = DeriveRequest.objects.filter(derive_request_id=derive_request_id).first()
        if request is None:
            raise CommandError(f"derive request '{derive_request_id}' does not exist", returncode=BAD_INPUT)
        decide = services.derive_request_reject if reject else services.derive_request_approve
        try:
            request = decide(request=request, user=actor, comment=comment, evidence=evidence)
        except SwitchyardError as error:
            raise CommandError(str(error), returncode=REFUSED) from None
        if not reject:
            deadline = time.monotonic() + max(wait, 0)
            while not DeriveRequest.objects.filter(pk=request.pk, result_agent__isnull=False).exists():
                if time.monotonic() >= deadline:
                    self.stderr.write("no worker created the child agent in time: creating it here")
                    try:
                        derive_request_create_child(request_pk=request.pk)
                    except SwitchyardError as error:
                        raise CommandError(f"approved, but the child agent could not be created: {error}",
                                           returncode=REFUSED) from None
                    break
                time.sleep(0.2)
        request = selectors.derive_request_get(derive_request_id)
        self.stdout.write(json.dumps(selectors.derive_request_full_document(request), indent=2, ensure_ascii=False))
