"""Replay of the Weave 1.0 add-on talking to the server (issue 3).

Two profiles of one account, as docs/protocol.md, What the 1.0 add-on
sends, describes the 1.0 client: profile A starts fresh (meta/global and
keys/pubkey answer 404, so it PUTs them), creates its RSA key pair and one
bulk key per engine (crypto/<engine>), and uploads every item in
100-record POSTs; profile B logs in later, unlocks the private key with the
passphrase and downloads with newer + full=1 + sort=index + limit=1500 and
Accept: application/newlines, then the ids-only follow-up and the 150-id
backlog fetches; A finally deletes duplicates 100 ids at a time. Every
record is really encrypted the 1.0 way (docs/protocol.md, The 1.0 add-on's
encryption: RSA-2048, PBKDF2-SHA1 4096, AES-256-CBC with the engine's
bulkIV, payload {"encryption","ciphertext"}), so the test proves the
server hands back exactly what the add-on stored.

Each answer is checked the way the add-on reads it: status, the
X-Weave-Timestamp header (exact spelling, two decimals, strictly rising
over writes), the PUT/DELETE body (the timestamp), the POST object, the
newlines framing the add-on's parser needs, and the modified values.

The steps share STATE and run in file order; a step refuses to run when
the one before it failed.
"""

import base64
import hashlib
import json
import os
import random
import re
import urllib.parse

from cryptography.hazmat.primitives import padding as sympadding
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding as asympadding
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

import weave
from weave import new_user, request

# Firefox 3.5/3.6's default Accept, sent on every request that does not
# stream records (docs/protocol.md, Output formats): it contains */*, so
# the answer must be JSON.
FIREFOX_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
NEWLINES = "application/newlines"
TS_RE = re.compile(r"^[0-9]{10}\.[0-9]{2}$")
# util.js makeGUID: 10 characters from this 70-character set
# (docs/protocol.md, What the 1.0 add-on sends).
GUID_CHARS = "!()*-.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~"
DOWNLOAD_LIMIT = 1500      # desktop fetch limit per sync
UPLOAD_BATCH = 100         # MAX_UPLOAD_RECORDS
GUID_FETCH = 150           # backlog ids per request
DELETE_BATCH = 100         # ids per DELETE in _syncFinish
N_HISTORY = 1850           # > 1500: forces the ids-only follow-up and a backlog

STATE = {"step": 0}
RNG = random.Random(1265402837)


def make_guid():
    return "".join(RNG.choice(GUID_CHARS) for _ in range(10))


def cs(stamp):
    """A two-decimal timestamp (str or float) as integer centiseconds."""
    return round(float(stamp) * 100)


def js_number(stamp):
    """How the add-on prints a timestamp it parsed as a JS number into a
    query string (shortest form: 1265402837.1, 1265402837)."""
    f = float(stamp)
    return str(int(f)) if f == int(f) else repr(f)


def js_escape(text):
    """JavaScript escape(), used by the 1.0 clients engine for its payload."""
    keep = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@*_+-./")
    out = []
    for ch in text:
        if ch in keep:
            out.append(ch)
        elif ord(ch) < 256:
            out.append("%%%02X" % ord(ch))
        else:
            out.append("%%u%04X" % ord(ch))
    return "".join(out)


def js_unescape(text):
    text = re.sub(r"%u([0-9A-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
    return re.sub(r"%([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), text)


def b64(data):
    return base64.b64encode(data).decode("ascii")


def aes_encrypt(key, iv, data):
    padder = sympadding.PKCS7(128).padder()
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return enc.update(padder.update(data) + padder.finalize()) + enc.finalize()


def aes_decrypt(key, iv, data):
    dec = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    unpadder = sympadding.PKCS7(128).unpadder()
    return unpadder.update(dec.update(data) + dec.finalize()) + unpadder.finalize()


def parse_newlines(body):
    """The add-on's incremental parser (collection.js): take each complete
    line up to a "\\n"; an empty line stops it; text after the last "\\n"
    is never read. Returns the records it would have handled, and checks
    that the server left nothing for it to lose."""
    assert not body.startswith(b"\n"), body[:80]
    assert body == b"" or body.endswith(b"\n"), body[-80:]
    assert b"\n\n" not in body, "blank line: the 1.0 parser stops there"
    records = []
    rest = body
    while True:
        at = rest.find(b"\n")
        if at <= 0:
            break
        records.append(json.loads(rest[:at]))
        rest = rest[at + 1:]
    assert rest == b"", rest[:80]
    return records


class Profile:
    """One Firefox profile running the Weave 1.0 add-on."""

    def __init__(self, user, password, passphrase):
        self.user = user
        self.password = password
        self.passphrase = passphrase
        self.base = None         # "/weave/1.0/<user>/" from node/weave
        self.cluster = None      # the node URL itself
        self.clock = {"last": 0}  # newest write answer (centiseconds), per account
        self.last_sync = {}      # engine -> lastSync (float, as the add-on keeps it)
        self.bulk = {}           # engine -> (key, iv)
        self.priv = None
        self.pub_url = None

    # -- the wire -------------------------------------------------------
    def call(self, method, path, body=None, accept=None, expect=200):
        """One request as resource.js sends it: Content-type text/plain on
        everything, Basic auth, Firefox's Accept unless records stream."""
        headers = [("Content-type", "text/plain"),
                   ("Accept", accept or FIREFOX_ACCEPT)]
        full = path if path.startswith("/") else self.base + path
        r = request(method, full, body=body, user=self.user,
                    password=self.password, headers=headers)
        assert r.status == expect, (method, path, r)
        # The add-on looks the header up with exactly this spelling.
        assert "X-Weave-Timestamp" in r.headers.names(), r
        ts = r.headers.get("X-Weave-Timestamp")
        assert TS_RE.match(ts), r
        if r.status == 200 and method in ("PUT", "POST", "DELETE"):
            assert cs(ts) > self.clock["last"], ("write timestamps must rise", ts, r)
            self.clock["last"] = cs(ts)
        if accept != NEWLINES or r.status != 200:
            # Everything but a streamed record list is JSON, errors included.
            assert r.headers.get("Content-Type") == "application/json", r
        return r

    def put(self, path, wbo):
        r = self.call("PUT", path, json.dumps(wbo))
        ts = r.headers.get("X-Weave-Timestamp")
        assert r.body == ts.encode(), r  # the body is the bare timestamp
        return ts

    def delete(self, path):
        r = self.call("DELETE", path)
        ts = r.headers.get("X-Weave-Timestamp")
        assert r.body == ts.encode(), r
        return ts

    def post(self, coll, wbos):
        r = self.call("POST", f"storage/{coll}", json.dumps(wbos))
        ts = r.headers.get("X-Weave-Timestamp")
        assert r.body.startswith(b'{"modified":' + ts.encode() + b","), r
        answer = r.json()
        assert set(answer) == {"modified", "success", "failed"}, r
        assert answer["success"] == [w["id"] for w in wbos], r
        assert answer["failed"] == {}, r
        return ts

    def get_json(self, path, expect=200):
        r = self.call("GET", path, expect=expect)
        return r, (r.json() if expect == 200 else None)

    def get_newlines(self, path):
        r = self.call("GET", path, accept=NEWLINES)
        assert r.headers.get("Content-Type") == NEWLINES, r
        records = parse_newlines(r.body)
        assert r.headers.get("X-Weave-Records") == str(len(records)), r
        # modified goes out with exactly two decimals, one per record.
        stamps = re.findall(rb'"modified":([0-9.eE+-]+)[,}]', r.body)
        assert len(stamps) == len(records), r
        assert all(TS_RE.match(t.decode()) for t in stamps), stamps[:5]
        for rec in records:
            assert None not in rec.values(), rec
        return r, records

    def url(self, path):
        return self.cluster + "1.0/" + self.user + "/" + path

    # -- setup ----------------------------------------------------------
    def find_cluster(self):
        # GET user/1/<u>/node/weave with Basic auth (service.js findCluster).
        r = request("GET", f"user/1/{self.user}/node/weave", user=self.user,
                    password=self.password)
        assert r.status == 200, r
        node = r.body.decode()
        assert node == weave.BASE_URL and node.endswith("/"), (node, weave.BASE_URL)
        self.cluster = node
        self.base = urllib.parse.urlsplit(node).path + "1.0/" + self.user + "/"

    # -- crypto (docs/protocol.md, The 1.0 add-on's encryption) -----------
    def make_keys(self):
        self.priv = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        spki = self.priv.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        pkcs8 = self.priv.private_bytes(
            serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption())
        salt, iv = os.urandom(16), os.urandom(16)
        self.pub_url = self.url("storage/keys/pubkey")
        pubkey = {"type": "pubkey", "keyData": b64(spki),
                  "privateKeyUri": self.url("storage/keys/privkey")}
        privkey = {"type": "privkey", "salt": b64(salt), "iv": b64(iv),
                   "keyData": b64(aes_encrypt(self.passphrase_key(salt), iv, pkcs8)),
                   "publicKeyUri": self.pub_url}
        return pubkey, privkey

    def passphrase_key(self, salt):
        return hashlib.pbkdf2_hmac("sha1", self.passphrase.encode("latin-1"),
                                   salt, 4096, 32)

    def unlock(self, pubkey, privkey):
        salt = base64.b64decode(privkey["salt"])
        der = aes_decrypt(self.passphrase_key(salt), base64.b64decode(privkey["iv"]),
                          base64.b64decode(privkey["keyData"]))
        self.priv = serialization.load_der_private_key(der, password=None)
        spki = self.priv.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        assert b64(spki) == pubkey["keyData"], "private key does not match pubkey"
        self.pub_url = privkey["publicKeyUri"]

    def new_bulk_key(self, engine):
        key, iv = os.urandom(32), os.urandom(16)
        self.bulk[engine] = (key, iv)
        wrapped = self.priv.public_key().encrypt(key, asympadding.PKCS1v15())
        return {"bulkIV": b64(iv), "keyring": {self.pub_url: b64(wrapped)}}

    def take_bulk_key(self, engine, payload):
        wrapped = base64.b64decode(payload["keyring"][self.pub_url])
        key = self.priv.decrypt(wrapped, asympadding.PKCS1v15())
        self.bulk[engine] = (key, base64.b64decode(payload["bulkIV"]))

    def encrypt(self, engine, guid, cleartext, **wbo_fields):
        key, iv = self.bulk[engine]
        plain = json.dumps([cleartext], ensure_ascii=False).encode("utf-8")
        payload = {"encryption": self.url(f"storage/crypto/{engine}"),
                   "ciphertext": b64(aes_encrypt(key, iv, plain))}
        return dict(id=guid, payload=json.dumps(payload), **wbo_fields)

    def decrypt(self, engine, wbo):
        if wbo["payload"] == "":
            return None  # a deleted record (tombstone)
        payload = json.loads(wbo["payload"])
        assert payload["encryption"] == self.url(f"storage/crypto/{engine}")
        key, iv = self.bulk[engine]
        plain = aes_decrypt(key, iv, base64.b64decode(payload["ciphertext"]))
        return json.loads(plain.decode("utf-8"))[0]

    # -- per-engine pieces (engines.js) -------------------------------------
    def crypto_meta(self, engine, expect_new):
        r, obj = self.get_json(f"storage/crypto/{engine}",
                               expect=404 if expect_new else 200)
        if expect_new:
            payload = self.new_bulk_key(engine)
            self.put(f"storage/crypto/{engine}", {"id": engine, "payload": json.dumps(payload)})
        else:
            assert obj["id"] == engine
            self.take_bulk_key(engine, json.loads(obj["payload"]))

    def upload(self, engine, wbos):
        """_uploadOutgoing: 100 records per POST; lastSync follows
        X-Weave-Timestamp. Returns the POST timestamps, one per record."""
        stamps = []
        for at in range(0, len(wbos), UPLOAD_BATCH):
            batch = wbos[at:at + UPLOAD_BATCH]
            ts = self.post(engine, batch)
            stamps += [ts] * len(batch)
            if float(ts) > self.last_sync.get(engine, 0):
                self.last_sync[engine] = float(ts)
        return stamps

    def download_query(self, engine):
        q = "" if not self.last_sync.get(engine) else f"newer={js_number(self.last_sync[engine])}&"
        return f"storage/{engine}?{q}full=1&sort=index&limit={DOWNLOAD_LIMIT}"


def index_order(wbos):
    """sort=index: sortindex descending, ties by id (bytes), no sortindex last."""
    return sorted(wbos, key=lambda w: (0, -w["sortindex"], w["id"].encode())
                  if "sortindex" in w else (1, 0, w["id"].encode()))


def _history_item(n, version=0):
    visits = [{"date": 1265402837000000 + n * 3600000000 + k * 60000000 + version,
               "type": 1 + (k % 2)} for k in range(3 + n % 4)]
    return {"histUri": f"http://www.example.org/section-{n % 17}/article-{n}.html?ref=weave&v={version}",
            "title": f"Article n\u00b0{n} \u2014 a page the user visited (rev {version})",
            "visits": visits}


def _need(step):
    assert STATE["step"] == step - 1, f"step {step - 1} did not complete; stopping here"


def test_replay_1_fresh_start_and_first_upload():
    _need(1)
    user, password = new_user("replay")
    a = Profile(user, password, "my s3cret passphrase")
    a.find_cluster()
    STATE.update(user=user, password=password, a=a)

    # _verifyLogin: info/collections must be 200 (never 404) for a new account.
    r, info = a.get_json("info/collections")
    assert r.body == b"{}" and r.headers.get("X-Weave-Records") == "0", r

    # _remoteSetup: meta/global is missing -> fresh start.
    a.get_json("storage/meta/global", expect=404)
    sync_id = make_guid()
    stamps = {}
    stamps["meta"] = a.put("storage/meta/global", {"id": "global", "payload": json.dumps(
        {"syncID": sync_id, "storageVersion": "1.0"})})
    r, info = a.get_json("info/collections")
    assert r.body == b'{"meta":' + stamps["meta"].encode() + b"}", r
    for coll in ("crypto", "keys", "clients"):  # _freshStart wipes these
        a.delete(f"storage/{coll}")
    r, info = a.get_json("info/collections")
    assert info == {"meta": float(stamps["meta"])}, r

    # Keys: pubkey is missing -> generate and upload both.
    a.get_json("storage/keys/pubkey", expect=404)
    pubkey, privkey = a.make_keys()
    a.put("storage/keys/pubkey", {"id": "pubkey", "payload": json.dumps(pubkey)})
    stamps["keys"] = a.put("storage/keys/privkey", {"id": "privkey", "payload": json.dumps(privkey)})

    # Once a day the add-on appends ?v=<version>; the query must be ignored.
    r, info = a.get_json("info/collections?v=1.0")
    assert info == {"meta": float(stamps["meta"]), "keys": float(stamps["keys"])}, r

    # clients engine first: not encrypted, payload = escape(JSON).
    client_id = make_guid()
    me = {"name": "Firefox auf Arbeitsplatz \u00e4", "type": "desktop", "commands": []}
    stamps["clients"] = a.post("clients", [{"id": client_id, "payload": js_escape(json.dumps(me))}])

    # Engines: no crypto record yet -> make one; nothing to download yet
    # (not in info/collections); upload everything in 100-record POSTs.
    data = {}
    for engine in ("bookmarks", "forms", "history"):
        a.crypto_meta(engine, expect_new=True)
    stamps["crypto"] = "%d.%02d" % divmod(a.clock["last"], 100)

    folders = ["menu", "toolbar", "unfiled"]
    bookmarks = []
    prev = {}
    for n in range(40):
        guid = make_guid() if n % 5 else "{GXS58IDC}%d" % n  # Places-style ids too
        parent = folders[n % 3]
        clear = {"type": "bookmark", "title": f"Bookmark {n}", "bmkUri": f"https://example.com/{n}",
                 "parentName": parent, "tags": ["t%d" % (n % 4)], "keyword": None,
                 "description": "", "loadInSidebar": False}
        fields = {"parentid": parent, "sortindex": 40 - n % 7}
        if parent in prev:
            fields["predecessorid"] = prev[parent]
            clear["predecessorid"] = prev[parent]
        prev[parent] = guid
        bookmarks.append((a.encrypt("bookmarks", guid, clear, **fields), clear))
    for folder in folders:
        clear = {"type": "folder", "title": folder.title(), "parentName": ""}
        bookmarks.append((a.encrypt("bookmarks", folder, clear, parentid="places",
                                    sortindex=1000000), clear))
    tomb = make_guid()
    bookmarks.append(({"id": tomb, "payload": ""}, None))  # a deleted bookmark

    forms = []
    for n in range(12):
        clear = {"name": "q", "value": f"search {n}"}
        forms.append((a.encrypt("forms", make_guid(), clear), clear))
    history = []
    for n in range(N_HISTORY):
        clear = _history_item(n)
        # Places frecency: many ties, so sort=index needs its id tie-break.
        history.append((a.encrypt("history", make_guid(), clear,
                                  sortindex=RNG.choice([0, 100, 100, 150, 2000, 2000, 40000])), clear))
    assert len({w["id"] for w, _ in history}) == N_HISTORY
    sizes = [len(w["payload"]) for w, _ in history]
    assert 500 <= sum(sizes) / len(sizes) <= 800, "history payloads should be ~600 bytes"

    for engine, items in (("bookmarks", bookmarks), ("forms", forms), ("history", history)):
        wbos = [w for w, _ in items]
        posted = a.upload(engine, wbos)
        assert len(posted) == len(wbos) and len(set(posted)) == -(-len(wbos) // UPLOAD_BATCH)
        data[engine] = {w["id"]: {"wbo": w, "clear": c, "modified": ts}
                        for (w, c), ts in zip(items, posted)}
        stamps[engine] = posted[-1]

    r, info = a.get_json("info/collections")
    assert {k: "%.2f" % v for k, v in info.items()} == stamps, (info, stamps)
    for name, ts in stamps.items():  # exact two-decimal text on the wire
        assert f'"{name}":{ts}'.encode() in r.body, (name, r)
    r, counts = a.get_json("info/collection_counts")
    assert counts == {"meta": 1, "keys": 2, "crypto": 3, "clients": 1,
                      "bookmarks": len(bookmarks), "forms": len(forms), "history": N_HISTORY}, counts

    STATE.update(sync_id=sync_id, stamps=stamps, data=data, tomb=tomb,
                 client_a=(client_id, me))
    STATE["step"] = 1


def test_replay_2_second_profile_logs_in_and_downloads():
    _need(2)
    a, data, stamps = STATE["a"], STATE["data"], STATE["stamps"]
    b = Profile(STATE["user"], STATE["password"], a.passphrase)
    b.clock = a.clock  # one account: its write timestamps rise across profiles
    b.find_cluster()
    STATE["b"] = b

    r, info = b.get_json("info/collections")
    assert {k: "%.2f" % v for k, v in info.items()} == stamps, r
    assert r.headers.get("X-Weave-Records") == str(len(stamps)), r

    # meta/global exists: adopt its syncID.
    r, meta = b.get_json("storage/meta/global")
    assert set(meta) == {"id", "modified", "payload"}, r  # null fields are omitted
    assert meta["id"] == "global" and "%.2f" % meta["modified"] == stamps["meta"]
    assert json.loads(meta["payload"]) == {"syncID": STATE["sync_id"], "storageVersion": "1.0"}

    # keys/pubkey, then the URL in privateKeyUri; unlock with the passphrase.
    r, pub = b.get_json("storage/keys/pubkey")
    pubkey = json.loads(pub["payload"])
    assert pubkey["privateKeyUri"] == b.url("storage/keys/privkey")
    r, priv = b.get_json(urllib.parse.urlsplit(pubkey["privateKeyUri"]).path)
    b.unlock(pubkey, json.loads(priv["payload"]))

    # clients: download A's record (newlines, sort=index, limit), add ours.
    r, recs = b.get_newlines(b.download_query("clients"))
    client_id, me = STATE["client_a"]
    assert [w["id"] for w in recs] == [client_id]
    assert json.loads(js_unescape(recs[0]["payload"])) == me
    b.post("clients", [{"id": make_guid(), "payload": js_escape(json.dumps(
        {"name": "Firefox on the laptop", "type": "desktop", "commands": []}))}])

    # bookmarks and forms: one download each gets everything, in order.
    for engine in ("bookmarks", "forms"):
        b.crypto_meta(engine, expect_new=False)
        r, recs = b.get_newlines(b.download_query(engine))
        want = index_order([d["wbo"] for d in data[engine].values()])
        assert [w["id"] for w in recs] == [w["id"] for w in want], engine
        for rec in recs:
            sent = data[engine][rec["id"]]
            assert "%.2f" % rec.pop("modified") == sent["modified"]
            assert rec == sent["wbo"], (rec, sent["wbo"])  # every field back, none added
            assert b.decrypt(engine, rec) == sent["clear"]
        b.last_sync[engine] = info[engine]
    tomb = [rec for rec in data["bookmarks"].values() if rec["wbo"]["id"] == STATE["tomb"]]
    assert tomb and tomb[0]["wbo"]["payload"] == ""

    # history: 1850 records, the download stops at the limit ...
    b.crypto_meta("history", expect_new=False)
    r, recs = b.get_newlines(b.download_query("history"))
    want = index_order([d["wbo"] for d in data["history"].values()])
    assert len(recs) == DOWNLOAD_LIMIT, len(recs)
    assert [w["id"] for w in recs] == [w["id"] for w in want[:DOWNLOAD_LIMIT]]
    for rec in recs:
        sent = data["history"][rec["id"]]
        assert "%.2f" % rec["modified"] == sent["modified"]
        assert rec["sortindex"] == sent["wbo"]["sortindex"]
        assert b.decrypt("history", rec) == sent["clear"]
    handled = [w["id"] for w in recs]

    # ... so the add-on asks for the ids (newer=lastSync, still 0 here, so
    # left out; Firefox's default Accept -> a JSON array) and keeps the
    # rest in its toFetch backlog.
    r, ids = b.get_json("storage/history?sort=index")
    assert r.headers.get("Content-Type") == "application/json", r
    assert r.headers.get("X-Weave-Records") == str(N_HISTORY), r
    assert ids == [w["id"] for w in want], "ids-only list in the same order"
    done = set(handled)
    b.to_fetch = [i for i in ids if i not in done]
    assert len(b.to_fetch) == N_HISTORY - DOWNLOAD_LIMIT
    # The fetch budget (1500) is used up: the backlog waits for the next sync.
    b.last_sync["history"] = info["history"]
    STATE["step"] = 2


def test_replay_3_changes_then_backlog_in_150_id_fetches():
    _need(3)
    a, b, data = STATE["a"], STATE["b"], STATE["data"]

    # A changes 120 history items (re-encrypted, new visit) in two POSTs and
    # re-uploads meta/global as fetched, "modified" member included.
    changed = RNG.sample(sorted(data["history"]), 120)
    wbos = []
    for guid in changed:
        old = data["history"][guid]
        clear = dict(old["clear"], visits=old["clear"]["visits"] + [{"date": 1265999999000000, "type": 2}])
        w = a.encrypt("history", guid, clear, sortindex=old["wbo"]["sortindex"] + 1)
        wbos.append(w)
        data["history"][guid] = {"wbo": w, "clear": clear}
    posted = a.upload("history", wbos)
    for guid, ts in zip(changed, posted):
        data["history"][guid]["modified"] = ts
    r, meta = a.get_json("storage/meta/global")
    meta_ts = a.put("storage/meta/global", meta)  # carries the old "modified"
    r, meta2 = a.get_json("storage/meta/global")
    assert "%.2f" % meta2["modified"] == meta_ts != "%.2f" % meta["modified"], meta2

    # B's next sync: history changed since lastSync -> newer=... download.
    r, info = b.get_json("info/collections")
    assert "%.2f" % info["history"] == posted[-1] and "%.2f" % info["meta"] == meta_ts
    assert info["history"] > b.last_sync["history"]
    r, recs = b.get_newlines(b.download_query("history"))
    assert "newer=" in b.download_query("history")
    assert sorted(w["id"] for w in recs) == sorted(changed), "exactly the changed records"
    assert [w["id"] for w in recs] == [w["id"] for w in index_order(wbos)]
    for rec in recs:
        assert "%.2f" % rec["modified"] == data["history"][rec["id"]]["modified"]
        assert b.decrypt("history", rec) == data["history"][rec["id"]]["clear"]
    fetched = len(recs)
    assert fetched < DOWNLOAD_LIMIT  # no ids-only follow-up this time

    # Backlog: full=1&sort=index&ids=<up to 150 ids>, ids unencoded.
    budget = DOWNLOAD_LIMIT - fetched
    requests_made = 0
    got = {}
    while b.to_fetch and budget > 0:
        n = min(GUID_FETCH, len(b.to_fetch), budget)
        batch, b.to_fetch = b.to_fetch[:n], b.to_fetch[n:]
        budget -= n
        r, recs = b.get_newlines("storage/history?full=1&sort=index&ids=" + ",".join(batch))
        requests_made += 1
        assert sorted(w["id"] for w in recs) == sorted(batch), "each asked id, once"
        want = index_order([data["history"][i]["wbo"] for i in batch])
        assert [w["id"] for w in recs] == [w["id"] for w in want]
        for rec in recs:
            assert "%.2f" % rec["modified"] == data["history"][rec["id"]]["modified"]
            assert b.decrypt("history", rec) == data["history"][rec["id"]]["clear"]
            got[rec["id"]] = rec
    assert requests_made == 3 and not b.to_fetch, (requests_made, len(b.to_fetch))
    assert len(got) == N_HISTORY - DOWNLOAD_LIMIT
    b.last_sync["history"] = info["history"]

    # Nothing new since: the add-on skips the download, and newer= agrees.
    r, info2 = b.get_json("info/collections")
    assert info2["history"] == b.last_sync["history"]
    r, recs = b.get_newlines(b.download_query("history"))
    assert recs == [] and r.body == b"" and r.headers.get("X-Weave-Records") == "0", r
    STATE["step"] = 3


def test_replay_4_duplicate_deletes_self_test_and_wipe():
    _need(4)
    a, b, data = STATE["a"], STATE["b"], STATE["data"]

    # _syncFinish: duplicates found in reconciliation, deleted 100 ids at a time.
    dupes = RNG.sample(sorted(data["history"]), 250)
    stamps = []
    for at in range(0, len(dupes), DELETE_BATCH):
        stamps.append(a.delete("storage/history?ids=" + ",".join(dupes[at:at + DELETE_BATCH])))
    assert len(stamps) == 3 and len(set(stamps)) == 3
    for guid in dupes:
        del data["history"][guid]
    r, counts = a.get_json("info/collection_counts")
    assert counts["history"] == N_HISTORY - 250, counts
    r, ids = a.get_json("storage/history?ids=" + ",".join(dupes[:100]))
    assert ids == [] and r.headers.get("X-Weave-Records") == "0", r
    r, ids = a.get_json("storage/history")
    assert sorted(ids) == sorted(data["history"]), "exactly the survivors"

    # Decryption self-test: the newest record, newlines, limit=1.
    r, recs = b.get_newlines("storage/history?full=1&sort=newest&limit=1")
    # sort=newest: modified descending, ties by id ascending.
    newest = min(data["history"].values(),
                 key=lambda d: (-cs(d["modified"]), d["wbo"]["id"].encode()))
    assert len(recs) == 1 and recs[0]["id"] == newest["wbo"]["id"], (recs, newest["wbo"]["id"])
    assert b.decrypt("history", recs[0]) == newest["clear"]

    # "Wipe server" for one engine: the collection and its crypto record.
    a.delete("storage/forms")
    a.delete("storage/crypto/forms")
    a.get_json("storage/crypto/forms", expect=404)
    r, info = a.get_json("info/collections")
    assert "forms" not in info and set(info) == {"meta", "keys", "crypto", "clients",
                                                 "bookmarks", "history"}, info
    r, recs = b.get_newlines("storage/forms?full=1&sort=index&limit=1500")
    assert recs == [] and r.body == b""
    STATE["step"] = 4
