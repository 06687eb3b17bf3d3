"""A confidential SMART app written with SMART's Python client (PyPI `fhirclient`, client-py).

Driven by test/smart/python-client.e2e-spec.ts: the app finds the authorize and token endpoints
the way client-py does (the CapabilityStatement's oauth-uris extension), prints the authorize URL
as one JSON line, reads the URL the member's browser came back to (after sign-in and consent) on
stdin, exchanges the code with its client secret (HTTP Basic) and PKCE verifier, then reads the
member's Patient and searches their Observations. Prints one JSON line with what it got.

Settings from the environment: FHIR_BASE, CLIENT_ID, CLIENT_SECRET, REDIRECT_URI, SCOPE.
"""

import json
import os
import sys

from fhirclient import client
from fhirclient.models.observation import Observation


def emit(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def main():
    smart = client.FHIRClient(
        settings={
            "app_id": os.environ["CLIENT_ID"],
            "app_secret": os.environ["CLIENT_SECRET"],
            "api_base": os.environ["FHIR_BASE"],
            "redirect_uri": os.environ["REDIRECT_URI"],
            "scope": os.environ["SCOPE"],
        }
    )
    emit({"authorize_url": smart.authorize_url})
    callback = sys.stdin.readline().strip()
    smart.handle_callback(callback)
    patient = smart.patient
    if patient is None:
        raise RuntimeError("no patient in the launch context")
    observations = list(
        Observation.where(struct={"patient": smart.patient_id}).perform_resources_iter(smart.server)
    )
    emit(
        {
            "ready": smart.ready,
            "patient_id": smart.patient_id,
            "patient_name": smart.human_name(patient.name[0]) if patient.name else None,
            "observations": len(observations),
            "observation_patients": sorted({o.subject.reference for o in observations if o.subject}),
        }
    )


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # the test reads what went wrong from the one JSON line
        emit({"error": f"{type(error).__name__}: {error}"})
        sys.exit(1)
