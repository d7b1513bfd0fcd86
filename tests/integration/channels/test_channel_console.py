"""The console channel: JSONL outbox as idempotency record, inbox file polled from an offset."""

from __future__ import annotations

import fcntl
import json
import logging
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest

from relay.channels.base import ChannelError, make_channel
from relay.channels.console import ConsoleChannel
from relay.core.errors import ConfigError


def _channel(data_dir: Path, **settings) -> ConsoleChannel:
    return ConsoleChannel.from_settings("console", {"_data_dir": str(data_dir), **settings})


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _append(path: Path, *records: dict | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        for record in records:
            handle.write(record if isinstance(record, str) else json.dumps(record) + "\n")


# --- send ------------------------------------------------------------------------------------


def test_send_appends_a_record_and_returns_a_console_id(data_dir, outbound, clock):
    clock.set(datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC))
    path, inbox = data_dir / "console.jsonl", data_dir / "console-inbox.jsonl"
    channel = ConsoleChannel("console", path, inbox, echo=False, clock=clock)

    provider_id = channel.send(outbound())

    assert provider_id.startswith("console-") and len(provider_id) == len("console-") + 12
    assert _lines(data_dir / "console.jsonl") == [
        {
            "message_id": 1,
            "instance_id": "r7k2",
            "to": "+15551230001",
            "text": "Hello there",
            "idempotency_key": "msg-1-a1b2c3",
            "provider_message_id": provider_id,
            "sent_at": "2025-03-04T05:06:07Z",
        }
    ]


def test_echo_goes_to_stderr_so_json_stdout_stays_clean(data_dir, outbound, capsys):
    _channel(data_dir).send(outbound(text="Hi!\nAre you free?"))

    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "→ +15551230001 [r7k2]: Hi! ⏎ Are you free?\n"


@pytest.mark.parametrize("echo", [False, "false", "0"])
def test_echo_can_be_turned_off(data_dir, outbound, capsys, echo):
    _channel(data_dir, echo=echo).send(outbound())

    assert capsys.readouterr() == ("", "")


def test_echo_rejects_a_value_that_is_not_a_boolean(data_dir):
    with pytest.raises(ConfigError, match=r"channels\.console\.echo"):
        _channel(data_dir, echo="sometimes")


def test_a_retry_with_the_same_key_is_not_written_twice(data_dir, outbound, capsys):
    channel = _channel(data_dir)
    first = channel.send(outbound())
    capsys.readouterr()

    again = channel.send(outbound(text="changed on retry"))

    assert again == first
    assert len(_lines(data_dir / "console.jsonl")) == 1
    assert capsys.readouterr().err == ""


def test_a_restarted_process_is_still_idempotent(data_dir, outbound):
    first = _channel(data_dir, echo=False).send(outbound())

    restarted = _channel(data_dir, echo=False)

    assert restarted.send(outbound()) == first
    assert len(_lines(data_dir / "console.jsonl")) == 1


def test_two_live_channels_on_one_file_see_each_others_writes(data_dir, outbound):
    a, b = _channel(data_dir, echo=False), _channel(data_dir, echo=False)

    assert b.send(outbound("k1")) == a.send(outbound("k1"))
    assert a.send(outbound("k2")) == b.send(outbound("k2"))
    assert [r["idempotency_key"] for r in _lines(data_dir / "console.jsonl")] == ["k1", "k2"]


def test_concurrent_senders_of_one_key_write_one_line(data_dir, outbound):
    # flock locks belong to open file descriptions, so threads with their own
    # channels exclude each other exactly as separate processes do.
    channels = [_channel(data_dir, echo=False) for _ in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = list(pool.map(lambda ch: ch.send(outbound("same")), channels * 4))

    assert len(set(ids)) == 1
    assert len(_lines(data_dir / "console.jsonl")) == 1


def test_concurrent_senders_of_many_keys_never_interleave_lines(data_dir, outbound):
    channels = [_channel(data_dir, echo=False) for _ in range(8)]
    jobs = [(channels[i % 8], f"key-{i}") for i in range(64)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda job: job[0].send(outbound(job[1], text="x" * 2000)), jobs))

    records = _lines(data_dir / "console.jsonl")
    assert sorted(r["idempotency_key"] for r in records) == sorted(k for _, k in jobs)


def test_a_line_torn_by_a_crash_does_not_swallow_the_next_message(data_dir, outbound):
    channel = _channel(data_dir, echo=False)
    first = channel.send(outbound("k1"))
    _append(data_dir / "console.jsonl", '{"idempotency_key": "k2", "provid')

    fresh = _channel(data_dir, echo=False)
    second = fresh.send(outbound("k2"))

    lines = (data_dir / "console.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["provider_message_id"] == first
    assert json.loads(lines[2])["provider_message_id"] == second
    assert fresh.send(outbound("k1")) == first


def test_a_file_emptied_by_hand_starts_a_new_record(data_dir, outbound):
    channel = _channel(data_dir, echo=False)
    first = channel.send(outbound("k1"))
    (data_dir / "console.jsonl").write_text("")

    assert channel.send(outbound("k1")) != first


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        (None, ".relay/console.jsonl"),
        ("out/sent.jsonl", "out/sent.jsonl"),
        (".relay/other.jsonl", ".relay/other.jsonl"),
    ],
)
def test_file_setting_resolves_against_the_config_folder(tmp_path, outbound, setting, expected):
    settings = {"_data_dir": str(tmp_path / ".relay"), "echo": False}
    if setting:
        settings["file"] = setting
    channel = make_channel("console", settings)

    channel.send(outbound())

    assert channel.path == tmp_path / expected
    assert (tmp_path / expected).is_file()


def test_an_absolute_file_setting_is_used_as_is(tmp_path, data_dir):
    target = tmp_path / "elsewhere" / "log.jsonl"

    assert _channel(data_dir, file=str(target)).path == target


# --- poll ------------------------------------------------------------------------------------


def _poll(channel, cursor=None):
    """Poll as the daemon does: from ``cursor``, returning messages and the next cursor."""
    incoming = channel.poll(cursor)
    return list(incoming.messages), incoming.cursor


def test_poll_without_an_inbox_file_returns_nothing(data_dir):
    assert _poll(_channel(data_dir)) == ([], None)


def test_poll_reads_inbox_lines_from_the_cursor_it_is_given(data_dir):
    inbox = data_dir / "console-inbox.jsonl"
    _append(
        inbox,
        {"from": "+15551230001", "text": "yes please"},
        {
            "from": "ann@example.com",
            "text": "later",
            "id": "abc",
            "received_at": "2025-01-02T03:04:05Z",
        },
    )
    channel = _channel(data_dir)

    first, cursor = _poll(channel)

    assert [(m.sender, m.text) for m in first] == [
        ("+15551230001", "yes please"),
        ("ann@example.com", "later"),
    ]
    assert first[0].received_at is None
    assert first[0].provider_message_id.startswith("console-in-0-")
    assert first[1].provider_message_id == "abc"
    assert first[1].received_at == datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert cursor == str(inbox.stat().st_size)
    assert _poll(channel, cursor) == ([], cursor)


def test_poll_keeps_no_position_of_its_own(data_dir):
    """Until the store keeps the new cursor, the same lines are read again:
    a crash between the poll and the commit loses nothing."""
    inbox = data_dir / "console-inbox.jsonl"
    _append(inbox, {"from": "+15551230001", "text": "one"})
    channel = _channel(data_dir)
    once, cursor = _poll(channel)
    again, _ = _poll(channel)

    assert [m.provider_message_id for m in once] == [m.provider_message_id for m in again]
    _append(inbox, {"from": "+15551230001", "text": "two"})
    assert [m.text for m in _poll(_channel(data_dir), cursor)[0]] == ["two"]
    assert not (data_dir / "console-inbox.jsonl.offset").exists()


def test_poll_starts_from_a_legacy_offset_file_when_the_store_has_no_cursor(data_dir):
    inbox = data_dir / "console-inbox.jsonl"
    _append(inbox, {"from": "+15551230001", "text": "old"})
    (data_dir / "console-inbox.jsonl.offset").write_text(str(inbox.stat().st_size))
    _append(inbox, {"from": "+15551230001", "text": "new"})

    assert [m.text for m in _poll(_channel(data_dir))[0]] == ["new"]


def test_poll_leaves_a_line_still_being_written_for_next_time(data_dir):
    inbox = data_dir / "console-inbox.jsonl"
    _append(inbox, '{"from": "+15551230001", "text": "hal')
    channel = _channel(data_dir)

    assert _poll(channel) == ([], "0")
    _append(inbox, 'f done"}\n')
    assert [m.text for m in _poll(channel, "0")[0]] == ["half done"]


def test_poll_skips_malformed_lines_with_a_warning(data_dir, caplog):
    _append(
        data_dir / "console-inbox.jsonl",
        "not json\n",
        {"text": "no sender"},
        "\n",
        {"from": "+15551230001", "text": "fine"},
    )

    with caplog.at_level(logging.WARNING, logger="relay.channels.console"):
        messages, _ = _poll(_channel(data_dir))

    assert [m.text for m in messages] == ["fine"]
    assert len(caplog.records) == 2


def test_poll_starts_over_when_the_inbox_was_truncated(data_dir):
    inbox = data_dir / "console-inbox.jsonl"
    _append(inbox, {"from": "+15551230001", "text": "a long first message"})
    channel = _channel(data_dir)
    _, cursor = _poll(channel)

    inbox.write_text(json.dumps({"from": "+1", "text": "new"}) + "\n")

    assert [m.text for m in _poll(channel, cursor)[0]] == ["new"]


def test_inbox_setting_moves_the_inbox(tmp_path, data_dir):
    channel = _channel(data_dir, inbox="replies.jsonl")
    _append(tmp_path / "replies.jsonl", {"from": "+15551230001", "text": "hi"})

    assert [m.text for m in _poll(channel)[0]] == ["hi"]


def test_an_unwritable_outbox_is_a_transient_channel_error(tmp_path, outbound):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    channel = ConsoleChannel("console", blocker / "console.jsonl", blocker / "inbox.jsonl")

    with pytest.raises(ChannelError, match="cannot write") as failure:
        channel.send(outbound())
    assert failure.value.transient


def test_an_unreadable_inbox_is_a_channel_error(tmp_path):
    folder = tmp_path / "inbox.jsonl"
    folder.mkdir()  # exists, but is a folder
    channel = ConsoleChannel("console", tmp_path / "out.jsonl", folder)

    with pytest.raises(ChannelError, match="cannot read"):
        channel.poll(None)


def test_separate_processes_share_one_record(data_dir):
    code = (
        "import sys\n"
        "from relay.channels.base import Outbound, make_channel\n"
        "ch = make_channel('console', {'_data_dir': sys.argv[1], 'echo': False})\n"
        "for i in range(30):\n"
        "    ch.send(Outbound(i, 'r1', '+15551230001', 'x' * 500, f'key-{i % 10}'))\n"
    )
    workers = [subprocess.Popen([sys.executable, "-c", code, str(data_dir)]) for _ in range(4)]
    assert [worker.wait(timeout=60) for worker in workers] == [0] * 4

    records = _lines(data_dir / "console.jsonl")
    assert sorted(r["idempotency_key"] for r in records) == sorted(f"key-{i}" for i in range(10))


def test_send_checks_and_appends_under_the_file_lock(data_dir, outbound):
    path = data_dir / "console.jsonl"
    path.parent.mkdir(parents=True)
    channel = _channel(data_dir, echo=False)
    result: list[str] = []
    with path.open("ab") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
        sender = threading.Thread(target=lambda: result.append(channel.send(outbound("k"))))
        sender.start()
        sender.join(timeout=0.2)  # a bounded check that it waits, not a sleep for time
        assert sender.is_alive(), "send went ahead while another process held the lock"
        # The other process records the same key, then lets go.
        record = {"idempotency_key": "k", "provider_message_id": "console-other"}
        holder.write((json.dumps(record) + "\n").encode())
        holder.flush()
        fcntl.flock(holder.fileno(), fcntl.LOCK_UN)
    sender.join()

    assert result == ["console-other"]
    assert len(_lines(path)) == 1


# --- send_many -------------------------------------------------------------------------------


def test_send_many_appends_each_message_in_order_and_returns_their_ids(data_dir, outbound):
    channel = _channel(data_dir, echo=False)

    ids = channel.send_many([outbound("k1", text="one"), outbound("k2", text="two")])

    records = _lines(data_dir / "console.jsonl")
    assert [(r["idempotency_key"], r["text"]) for r in records] == [("k1", "one"), ("k2", "two")]
    assert ids == [r["provider_message_id"] for r in records]
    assert len(set(ids)) == 2


def test_send_many_of_nothing_writes_nothing(data_dir):
    assert _channel(data_dir, echo=False).send_many([]) == []
    assert not (data_dir / "console.jsonl").exists()


def test_send_and_send_many_share_one_idempotency_record(data_dir, outbound):
    channel = _channel(data_dir, echo=False)
    first = channel.send(outbound("k1"))

    ids = channel.send_many([outbound("k1"), outbound("k2"), outbound("k2")])

    assert ids[0] == first and ids[1] == ids[2] != first
    assert channel.send(outbound("k2")) == ids[1]
    assert _channel(data_dir, echo=False).send_many([outbound("k2"), outbound("k1")]) == [
        ids[1],
        first,
    ]
    assert [r["idempotency_key"] for r in _lines(data_dir / "console.jsonl")] == ["k1", "k2"]


def test_send_many_echoes_only_what_it_wrote(data_dir, outbound, capsys):
    channel = _channel(data_dir)
    channel.send(outbound("k1", text="old"))
    capsys.readouterr()

    channel.send_many([outbound("k1", text="old"), outbound("k2", text="new"), outbound("k2")])

    assert capsys.readouterr().err.count("\n") == 1


def test_send_many_after_a_torn_line_starts_on_a_fresh_line(data_dir, outbound):
    _append(data_dir / "console.jsonl", '{"idempotency_key": "k0", "provid')

    ids = _channel(data_dir, echo=False).send_many([outbound("k1"), outbound("k2")])

    lines = (data_dir / "console.jsonl").read_text().splitlines()
    assert [json.loads(line)["provider_message_id"] for line in lines[1:]] == ids


def test_an_unwritable_outbox_fails_send_many_and_records_nothing(tmp_path, outbound):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    channel = ConsoleChannel("console", blocker / "console.jsonl", blocker / "inbox.jsonl")

    with pytest.raises(ChannelError, match="cannot write") as failure:
        channel.send_many([outbound("k1"), outbound("k2")])
    assert failure.value.transient
    assert channel._index == {}
