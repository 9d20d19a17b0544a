#!/usr/bin/env python3
"""Checks the deployment files in examples/deploy/ for what makes them work.

Kubernetes (every *.yaml): the socket (and spool, if the app drops into it)
is one volume seen by the sidecar and the app at the paths they are given;
the groups let the app open the 0660 socket; the sidecar is a native sidecar
(init container, restartPolicy Always) next to an app, probed on /healthz;
security contexts (non-root, read-only root, drop ALL, no privilege
escalation, RuntimeDefault seccomp); resource requests; service accounts.
systemd: the sandboxing keys, the paths the sidecar writes are writable,
the app drop-in reaches the socket (systemd-analyze verify when present).
Dockerfiles: multi-stage bookworm, non-root USER, and the final stage
installs the Debian package of each library the binary links (on Debian 12).
Every pushprof-sidecar flag used anywhere is one `--help` lists; each
sidecar command line is started for real (paths moved to a temp dir) and
must answer /healthz; each app's PUSHPROF_* environment goes through the real
preload library, which must not call it invalid. End to end, for each app and
the sidecar it reaches: demo_work under the preload library with the file's
PUSHPROF_* pushes to the sidecar started with the file's flags, and a profile
must come out (checked with go tool pprof); with PUSHPROF_SPOOL_DIR, again
with the sidecar down at the app's exit and started afterwards. (Skipped with
a note while the SDK cannot push.)

usage: check_deploy.py [--self-test] [--static] DIR
  --self-test  also break copies of DIR in known ways; each must be caught
  --static     skip the checks that start processes
Environment: PUSHPROF_BUILD_DIR (built binaries), PUSHPROF_SOURCE_DIR.
"""
import copy
import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

BUILD = os.environ.get("PUSHPROF_BUILD_DIR", "build")
SOURCE = os.environ.get("PUSHPROF_SOURCE_DIR", ".")
SIDECAR_BIN = os.path.join(BUILD, "sidecar", "pushprof-sidecar")
# The HTTP exporters, which the sidecar dlopen()s beside itself or from
# ../lib/pushprof (sidecar/exporters/http_module.h).
SIDECAR_HTTP_MODULE = os.path.join(BUILD, "sidecar", "pushprof-sidecar-http.so")
PRELOAD_LIB = os.path.join(BUILD, "sdk", "libpushprof_preload.so")
ROOT_HELPER_CAPS = {"CHOWN", "FOWNER"}  # all a one-shot root init container may add


_NEEDED_CACHE = {}


def needed_packages(binary):
    """{soname: {Debian packages shipping it}} for BINARY's DT_NEEDED (one dpkg call, cached)."""
    if binary in _NEEDED_CACHE:
        return _NEEDED_CACHE[binary]
    r = subprocess.run(["objdump", "-p", binary], capture_output=True, text=True, timeout=30)
    sonames = re.findall(r"^\s*NEEDED\s+(\S+)", r.stdout, re.M)
    ld = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    paths = {}
    for so in sonames:
        m = re.search(r"^\s*%s \(.*\) => (\S+)" % re.escape(so), ld, re.M)
        if m:
            # dpkg knows the file under /lib or /usr/lib (usrmerge), by its
            # soname link or by the file the link names.
            cands = set()
            for f in (m.group(1), os.path.join(os.path.dirname(m.group(1)), os.path.basename(os.path.realpath(m.group(1))))):
                cands.add(f)
                cands.add(f[4:] if f.startswith("/usr/") else "/usr" + f)
            paths[so] = cands
    out = {so: set() for so in sonames}
    if paths:
        allp = sorted(set().union(*paths.values()))
        q = subprocess.run(["dpkg", "-S"] + allp, capture_output=True, text=True, timeout=120)
        owner = {}
        for line in q.stdout.splitlines():
            pkg, _, path = line.partition(": ")
            owner.setdefault(path.strip(), set()).update(p.split(":")[0] for p in pkg.split(", "))
        for so, cands in paths.items():
            for c in cands:
                out[so] |= owner.get(c, set())
    _NEEDED_CACHE[binary] = out
    return out


class Checker:
    def __init__(self, directory, static=False, e2e=True):
        self.dir = directory
        self.static = static
        self.e2e = e2e
        self.errors = []
        self.notes = []
        self.sidecar_cmdlines = []  # (where, [args])
        self.app_envs = []  # (where, {PUSHPROF_*: value})
        self.flag_uses = []  # (where, flag)
        self.pairs = []  # (where, sidecar args, app PUSHPROF_* env): end to end
        self.e2e_done = 0

    def err(self, where, msg):
        self.errors.append("%s: %s" % (where, msg))

    # ---------------------------------------------------------------- helpers
    def rel(self, path):
        return os.path.relpath(path, self.dir)

    @staticmethod
    def flags_of(args):
        """[--a=1, --b, 2, --c] -> [(a, '1'), (b, '2'), (c, None)]."""
        out, i = [], 0
        args = [str(a) for a in args]
        while i < len(args):
            a = args[i]
            if a.startswith("--"):
                if "=" in a:
                    k, v = a[2:].split("=", 1)
                elif i + 1 < len(args) and not args[i + 1].startswith("--"):
                    k, v = a[2:], args[i + 1]
                    i += 1
                else:
                    k, v = a[2:], None
                out.append((k, v))
            i += 1
        return out

    # ------------------------------------------------------------- kubernetes
    @staticmethod
    def pod_spec(doc):
        kind = doc.get("kind")
        spec = doc.get("spec") or {}
        if kind == "Pod":
            return spec
        if kind in ("Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job"):
            return (spec.get("template") or {}).get("spec")
        if kind == "CronJob":
            return (((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get("spec")
        return None

    @staticmethod
    def is_sidecar(c):
        return "pushprof-sidecar" in str(c.get("image", "")) and not c.get("command")

    @staticmethod
    def env_of(c):
        return {e.get("name"): e.get("value") for e in c.get("env") or [] if "name" in e}

    @staticmethod
    def eff(pod, c, key):
        sc = c.get("securityContext") or {}
        if key in sc:
            return sc[key]
        return (pod.get("securityContext") or {}).get(key)

    def volume_at(self, where, pod, c, path, podid):
        """The volume identity of PATH inside container C, and the mount."""
        best = None
        for m in c.get("volumeMounts") or []:
            mp = m.get("mountPath", "").rstrip("/") or "/"
            if path == mp or path.startswith(mp + "/"):
                if best is None or len(mp) > len(best[0]):
                    best = (mp, m)
        if best is None:
            return None, None
        mp, m = best
        vols = {v.get("name"): v for v in pod.get("volumes") or []}
        v = vols.get(m.get("name"))
        if v is None:
            self.err(where, "volumeMount %r names no volume of the pod" % m.get("name"))
            return None, None
        sub = m.get("subPath", "")
        relp = os.path.normpath(os.path.join(sub, os.path.relpath(path, mp)))
        if "hostPath" in v:
            return ("host", os.path.normpath(os.path.join(v["hostPath"].get("path", ""), relp))), m
        if "emptyDir" in v:
            return ("emptyDir", podid, m.get("name"), relp), m
        return ("other", podid, m.get("name"), relp), m

    def check_container_security(self, where, pod, c, init_oneshot):
        name = "%s container %s" % (where, c.get("name"))
        sc = c.get("securityContext") or {}
        caps = sc.get("capabilities") or {}
        drop = [str(x).upper() for x in caps.get("drop") or []]
        add = {str(x).upper() for x in caps.get("add") or []}
        uid = self.eff(pod, c, "runAsUser")
        if uid == 0:
            # The only root allowed: a one-shot init step with CHOWN/FOWNER.
            if not init_oneshot or self.is_sidecar(c) or not add <= ROOT_HELPER_CAPS:
                self.err(name, "runs as root (runAsUser 0); only a one-shot init container "
                         "adding at most %s may" % sorted(ROOT_HELPER_CAPS))
        else:
            if self.eff(pod, c, "runAsNonRoot") is not True:
                self.err(name, "runAsNonRoot is not true")
            if uid is None:
                self.err(name, "runAsUser is not set (the socket's group arithmetic needs it)")
            if add:
                self.err(name, "adds capabilities %s" % sorted(add))
        if sc.get("allowPrivilegeEscalation") is not False:
            self.err(name, "allowPrivilegeEscalation is not false")
        if sc.get("readOnlyRootFilesystem") is not True:
            self.err(name, "readOnlyRootFilesystem is not true")
        if "ALL" not in drop:
            self.err(name, "capabilities.drop lacks ALL")
        if sc.get("privileged"):
            self.err(name, "is privileged")
        seccomp = (sc.get("seccompProfile") or (pod.get("securityContext") or {}).get("seccompProfile") or {})
        if seccomp.get("type") not in ("RuntimeDefault", "Localhost"):
            self.err(name, "seccompProfile is not RuntimeDefault (pod or container)")
        req = (c.get("resources") or {}).get("requests") or {}
        if "cpu" not in req or "memory" not in req:
            self.err(name, "resources.requests lacks cpu or memory")

    def groups_of(self, pod, c):
        g = set()
        for key in ("runAsGroup",):
            v = self.eff(pod, c, key)
            if v is not None:
                g.add(v)
        psc = pod.get("securityContext") or {}
        if psc.get("fsGroup") is not None:
            g.add(psc["fsGroup"])
        g.update(psc.get("supplementalGroups") or [])
        return g

    def check_probe_port(self, where, c, port):
        ports = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
        probes = {k: c.get(k) for k in ("startupProbe", "livenessProbe", "readinessProbe") if c.get(k)}
        if "livenessProbe" not in probes:
            self.err(where, "sidecar has no livenessProbe")
        for k, p in probes.items():
            hg = p.get("httpGet") or {}
            pp = hg.get("port")
            pp = ports.get(pp, pp)
            if hg.get("path") != "/healthz" or str(pp) != str(port):
                self.err(where, "%s is not httpGet /healthz on the --metrics-addr port %s" % (k, port))
        return probes

    def check_pod(self, where, doc, pod, podid, k8s):
        inits = pod.get("initContainers") or []
        mains = pod.get("containers") or []
        if not mains:
            self.err(where, "pod has no containers")
        for c in inits:
            self.check_container_security(where, pod, c, c.get("restartPolicy") != "Always")
        for c in mains:
            self.check_container_security(where, pod, c, False)
        sidecars = [(c, True) for c in inits if self.is_sidecar(c)] + [(c, False) for c in mains if self.is_sidecar(c)]
        apps = [c for c in inits + mains if "PUSHPROF_SOCKET" in self.env_of(c) and not self.is_sidecar(c)]
        for c, in_init in sidecars:
            cw = "%s sidecar %s" % (where, c.get("name"))
            flags = dict(self.flags_of(c.get("args") or []))
            for f, _ in self.flags_of(c.get("args") or []):
                self.flag_uses.append((cw, f))
            self.sidecar_cmdlines.append((cw, [str(a) for a in c.get("args") or []]))
            if apps and not in_init:
                self.err(cw, "runs next to the app as a regular container; make it an initContainer "
                         "with restartPolicy: Always (native sidecar) so it starts first and stops last")
            if in_init and c.get("restartPolicy") != "Always":
                self.err(cw, "is an initContainer without restartPolicy: Always (it would block the app)")
            if not in_init and doc.get("kind") != "DaemonSet":
                self.err(cw, "a sidecar outside initContainers is only expected in a DaemonSet")
            if (c.get("resources") or {}).get("limits", {}).get("memory") is None:
                self.err(cw, "no memory limit")
            sock = flags.get("socket")
            if not sock or not sock.startswith("/"):
                self.err(cw, "--socket with an absolute path is required")
                continue
            sid, sm = self.volume_at(cw, pod, c, sock, podid)
            if sid is None:
                self.err(cw, "--socket %s is on no volume (the root filesystem is read-only and "
                         "the app could not see it)" % sock)
            else:
                if sm.get("mountPath", "").rstrip("/") != os.path.dirname(sock):
                    self.err(cw, "the socket volume is mounted at %s, not at the socket's directory %s"
                             % (sm.get("mountPath"), os.path.dirname(sock)))
                if sm.get("readOnly"):
                    self.err(cw, "the socket volume is mounted read-only in the sidecar")
            writes = [("--spool", flags.get("spool") or "/var/lib/pushprof/spool")]
            exp = flags.get("export") or "file:///var/lib/pushprof/profiles"
            if exp.startswith("file://"):
                writes.append(("--export", exp[len("file://"):]))
            spool_id = None
            for what, p in writes:
                vid, m = self.volume_at(cw, pod, c, p, podid)
                if vid is None or m.get("readOnly"):
                    self.err(cw, "%s %s is not on a writable volume (read-only root filesystem)" % (what, p))
                elif what == "--spool":
                    spool_id = vid
            maddr = flags.get("metrics-addr")
            if not maddr:
                self.err(cw, "no --metrics-addr: /healthz is off, the probes cannot work")
            else:
                host, _, port = maddr.rpartition(":")
                if host in ("127.0.0.1", "localhost", "[::1]"):
                    self.err(cw, "--metrics-addr %s is loopback: the kubelet probes the pod IP" % maddr)
                probes = self.check_probe_port(cw, c, port)
                if apps and in_init and "startupProbe" not in probes:
                    self.err(cw, "native sidecar without startupProbe: the app may start before the socket exists")
            suid = self.eff(pod, c, "runAsUser")
            sgid = self.eff(pod, c, "runAsGroup")
            fsg = (pod.get("securityContext") or {}).get("fsGroup")
            sock_group = fsg if (sid and sid[0] == "emptyDir" and fsg is not None) else sgid
            if sock_group is None:
                self.err(cw, "the socket's group is unknown: set runAsGroup (or fsGroup with an emptyDir)")
            k8s["sidecars"].append(dict(where=cw, sock=sid, spool=spool_id, uid=suid, group=sock_group,
                                        args=[str(a) for a in c.get("args") or []],
                                        allow=flags.get("allow-uid"), podid=podid))
        for c in apps:
            aw = "%s app %s" % (where, c.get("name"))
            env = self.env_of(c)
            self.app_envs.append((aw, {k: v for k, v in env.items() if k and k.startswith("PUSHPROF_")}))
            pre = env.get("LD_PRELOAD")
            if pre is not None and os.path.basename(pre) != "libpushprof_preload.so":
                self.err(aw, "LD_PRELOAD %s is not libpushprof_preload.so" % pre)
            sock = env["PUSHPROF_SOCKET"] or ""
            aid, am = self.volume_at(aw, pod, c, sock, podid)
            if aid is None:
                self.err(aw, "PUSHPROF_SOCKET %s is on no volume shared with the sidecar" % sock)
            elif am.get("mountPath", "").rstrip("/") != os.path.dirname(sock):
                self.err(aw, "the socket volume is mounted at %s, not at PUSHPROF_SOCKET's directory %s"
                         % (am.get("mountPath"), os.path.dirname(sock)))
            spool = env.get("PUSHPROF_SPOOL_DIR")
            spid = None
            if spool:
                spid, spm = self.volume_at(aw, pod, c, spool, podid)
                if spid is None:
                    self.err(aw, "PUSHPROF_SPOOL_DIR %s is on no volume shared with the sidecar" % spool)
                elif spm.get("readOnly"):
                    self.err(aw, "PUSHPROF_SPOOL_DIR %s is mounted read-only" % spool)
                elif spm.get("mountPath", "").rstrip("/") != spool.rstrip("/"):
                    self.err(aw, "the spool volume is mounted at %s, not at PUSHPROF_SPOOL_DIR %s"
                             % (spm.get("mountPath"), spool))
            k8s["apps"].append(dict(where=aw, sock=aid, spool=spid, spool_path=spool,
                                    env={k: v for k, v in env.items() if k and k.startswith("PUSHPROF_")},
                                    uid=self.eff(pod, c, "runAsUser"), groups=self.groups_of(pod, c),
                                    podid=podid))
        sa = pod.get("serviceAccountName")
        if sidecars and sa:
            k8s["sa_refs"].append((where, sa))

    def check_service_account(self, where, doc, text, k8s):
        name = (doc.get("metadata") or {}).get("name")
        ann = (doc.get("metadata") or {}).get("annotations") or {}
        k8s["sa_defs"].add(name)
        good = False
        for k, v in ann.items():
            if k == "eks.amazonaws.com/role-arn":
                if not re.fullmatch(r"arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+", str(v)):
                    self.err(where, "eks.amazonaws.com/role-arn %r is not an IAM role ARN" % v)
                if "--export=s3://" not in text:
                    self.err(where, "IRSA service account without the matching --export=s3:// in its comments")
                good = True
            elif k == "iam.gke.io/gcp-service-account":
                if not re.fullmatch(r"[a-z][a-z0-9-]{4,28}[a-z0-9]@[a-z][a-z0-9-]*\.iam\.gserviceaccount\.com", str(v)):
                    self.err(where, "iam.gke.io/gcp-service-account %r is not a Google service account e-mail" % v)
                if "--export=gs://" not in text:
                    self.err(where, "Workload Identity service account without the matching --export=gs:// in its comments")
                good = True
            elif "eks.amazonaws.com" in k or "iam.gke.io" in k:
                self.err(where, "unknown annotation %r (expected eks.amazonaws.com/role-arn or "
                         "iam.gke.io/gcp-service-account)" % k)
        if not good:
            self.err(where, "service account %s has no IRSA or Workload Identity annotation" % name)

    def check_kubernetes(self):
        files = sorted(glob.glob(os.path.join(self.dir, "*.yaml")) + glob.glob(os.path.join(self.dir, "*.yml")))
        if not files:
            self.err(self.dir, "no YAML files")
        k8s = dict(sidecars=[], apps=[], sa_refs=[], sa_defs=set())
        kinds = set()
        for f in files:
            text = open(f).read()
            for line in text.splitlines():
                m = re.match(r"\s*#\s*-\s*--([a-z0-9-]+)", line)
                if m:
                    self.flag_uses.append(("%s (comment)" % self.rel(f), m.group(1)))
            try:
                docs = [d for d in yaml.safe_load_all(text) if d is not None]
            except yaml.YAMLError as e:
                self.err(self.rel(f), "not valid YAML: %s" % e)
                continue
            for i, doc in enumerate(docs):
                where = "%s[%d] %s/%s" % (self.rel(f), i, doc.get("kind"), (doc.get("metadata") or {}).get("name"))
                kinds.add(doc.get("kind"))
                if doc.get("kind") == "ServiceAccount":
                    self.check_service_account(where, doc, text, k8s)
                    continue
                pod = self.pod_spec(doc)
                if pod is None:
                    self.err(where, "unexpected kind %r" % doc.get("kind"))
                    continue
                self.check_pod(where, doc, pod, "%s#%d" % (f, i), k8s)
        for need in ("Deployment", "CronJob", "DaemonSet", "ServiceAccount"):
            if need not in kinds:
                self.err(self.dir, "no %s among the YAML files" % need)
        # Every app reaches a sidecar's socket, and that sidecar can serve it.
        for a in k8s["apps"]:
            if a["sock"] is None:
                continue
            match = [s for s in k8s["sidecars"] if s["sock"] == a["sock"]]
            if not match:
                self.err(a["where"], "PUSHPROF_SOCKET is not the file any sidecar's --socket creates")
            for s in match:
                if a["sock"][0] == "emptyDir" and s["podid"] != a["podid"]:
                    continue
                self.pairs.append(("%s -> %s" % (a["where"], s["where"]), s["args"], a["env"]))
                if s["uid"] != a["uid"] and s["group"] not in a["groups"]:
                    self.err(a["where"], "cannot open the 0660 socket of %s: uid %s, groups %s; "
                             "socket owner %s group %s" % (s["where"], a["uid"], sorted(a["groups"]),
                                                            s["uid"], s["group"]))
                if s["allow"]:
                    allowed = [x.strip() for x in s["allow"].split(",")]
                    if all(x.isdigit() for x in allowed) and str(a["uid"]) not in allowed:
                        self.err(a["where"], "uid %s is not in --allow-uid=%s of %s" % (a["uid"], s["allow"], s["where"]))
                if a["spool_path"] and a["spool"] != s["spool"]:
                    self.err(a["where"], "PUSHPROF_SPOOL_DIR %s is not the sidecar's --spool" % a["spool_path"])
        for s in k8s["sidecars"]:
            if s["sock"] and s["sock"][0] == "host":
                continue
            if not any(a["sock"] == s["sock"] for a in k8s["apps"]):
                self.err(s["where"], "no app in the pod uses this sidecar's socket")
        for where, sa in k8s["sa_refs"]:
            if sa not in k8s["sa_defs"]:
                self.err(where, "serviceAccountName %s is defined in no file here" % sa)

    # ---------------------------------------------------------------- systemd
    @staticmethod
    def parse_unit(path):
        sections, cur = {}, None
        for line in open(path):
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("[") and line.endswith("]"):
                cur = sections.setdefault(line[1:-1], {})
                continue
            k, sep, v = line.partition("=")
            if not sep or cur is None:
                raise ValueError("%s: not key=value: %r" % (path, line))
            cur.setdefault(k.strip(), []).append(v.strip())
        return sections

    @staticmethod
    def parse_env(path):
        env, commented = {}, []
        for line in open(path):
            s = line.strip()
            m = re.match(r"#?\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$", s)
            if not m:
                continue
            v = m.group(2)
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
                v = v[1:-1]
            if s.startswith("#"):
                commented.append((m.group(1), v))
            else:
                env[m.group(1)] = v
        return env, commented

    def check_systemd(self):
        units = glob.glob(os.path.join(self.dir, "*.service"))
        if len(units) != 1:
            self.err(self.dir, "expected one .service file, found %d" % len(units))
            return
        uw = self.rel(units[0])
        try:
            u = self.parse_unit(units[0])
        except ValueError as e:
            self.err(uw, str(e))
            return
        svc = u.get("Service", {})
        one = lambda k: (svc.get(k) or [None])[-1]
        want = {"ProtectSystem": ("strict",), "ProtectHome": ("yes", "read-only", "tmpfs"),
                "PrivateTmp": ("yes", "true"), "NoNewPrivileges": ("yes", "true")}
        for k, ok in want.items():
            if one(k) not in ok:
                self.err(uw, "%s=%s; expected %s" % (k, one(k), "/".join(ok)))
        user = one("User")
        dyn = one("DynamicUser") in ("yes", "true")
        if not dyn and (not user or user in ("root", "0")):
            self.err(uw, "neither DynamicUser=yes nor a non-root User=")
        group = one("Group") or user
        rundirs = " ".join(svc.get("RuntimeDirectory", [])).split()
        statedirs = " ".join(svc.get("StateDirectory", [])).split()
        if not rundirs:
            self.err(uw, "no RuntimeDirectory= for the socket")
        rmode = one("RuntimeDirectoryMode")
        if not rmode or not re.fullmatch(r"0?[0-7]{3,4}", rmode) or rmode[-1] != "0":
            self.err(uw, "RuntimeDirectoryMode=%s: set it, without access for others" % rmode)
        if not statedirs:
            self.err(uw, "no StateDirectory= for the spool")
        envfiles = [e.lstrip("-") for e in svc.get("EnvironmentFile", [])]
        if "/etc/default/pushprof-sidecar" not in envfiles:
            self.err(uw, "EnvironmentFile=/etc/default/pushprof-sidecar missing")
        envfile = os.path.join(self.dir, "pushprof-sidecar.env")
        env, commented = ({}, []) if not os.path.exists(envfile) else self.parse_env(envfile)
        if not os.path.exists(envfile):
            self.err(self.rel(envfile), "missing")
        start = one("ExecStart") or ""
        argv = shlex.split(start.lstrip("-@:+!"))
        if not argv or os.path.basename(argv[0]) != "pushprof-sidecar":
            self.err(uw, "ExecStart does not run pushprof-sidecar")
            return
        expanded = []
        for a in argv[1:]:
            m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", a)
            if m:
                if m.group(1) not in env:
                    self.err(uw, "ExecStart uses $%s, which pushprof-sidecar.env does not set" % m.group(1))
                expanded += env.get(m.group(1), "").split()
            else:
                expanded.append(a)
        for f, _ in self.flags_of(expanded):
            self.flag_uses.append((uw + " ExecStart (+ env file)", f))
        for k, v in commented:
            if k in env or k.endswith("_OPTS"):
                for f, _ in self.flags_of(v.split()):
                    self.flag_uses.append((self.rel(envfile) + " (comment)", f))
        self.sidecar_cmdlines.append((uw, expanded))
        flags = dict(self.flags_of(expanded))
        sock = flags.get("socket", "")
        spool = flags.get("spool", "/var/lib/pushprof/spool")
        if os.path.dirname(sock) not in ["/run/" + d for d in rundirs]:
            self.err(uw, "--socket %r is not directly in a RuntimeDirectory (/run/%s)" % (sock, "|".join(rundirs)))
        writable = ["/run/" + d for d in rundirs] + ["/var/lib/" + d for d in statedirs]
        writable += [p.lstrip("-") for p in " ".join(svc.get("ReadWritePaths", [])).split()]
        inside = lambda p: any(p == w or p.startswith(w.rstrip("/") + "/") for w in writable)
        if not inside(spool):
            self.err(uw, "--spool %s is not writable under ProtectSystem=strict" % spool)
        exp = flags.get("export", "file:///var/lib/pushprof/profiles")
        if exp.startswith("file://") and not inside(exp[7:]):
            self.err(uw, "--export %s is not writable under ProtectSystem=strict" % exp)
        # The app drop-in.
        dropins = [p for p in glob.glob(os.path.join(self.dir, "*.conf"))
                   if "PUSHPROF_SOCKET" in open(p).read()]
        if not dropins:
            self.err(self.dir, "no systemd drop-in for an app (a .conf with PUSHPROF_SOCKET)")
        for p in dropins:
            dw = self.rel(p)
            try:
                d = self.parse_unit(p)
            except ValueError as e:
                self.err(dw, str(e))
                continue
            ds = d.get("Service", {})
            denv = {}
            for line in ds.get("Environment", []):
                for kv in shlex.split(line):
                    k, _, v = kv.partition("=")
                    denv[k] = v
            self.app_envs.append((dw, {k: v for k, v in denv.items() if k.startswith("PUSHPROF_")}))
            self.pairs.append((dw + " -> " + uw, expanded, {k: v for k, v in denv.items() if k.startswith("PUSHPROF_")}))
            if denv.get("PUSHPROF_SOCKET") != sock:
                self.err(dw, "PUSHPROF_SOCKET=%s but the sidecar listens on %s" % (denv.get("PUSHPROF_SOCKET"), sock))
            if "PUSHPROF_SPOOL_DIR" in denv and denv["PUSHPROF_SPOOL_DIR"] != spool:
                self.err(dw, "PUSHPROF_SPOOL_DIR=%s but the sidecar's --spool is %s" % (denv["PUSHPROF_SPOOL_DIR"], spool))
            pre = denv.get("LD_PRELOAD")
            if pre is not None and os.path.basename(pre) != "libpushprof_preload.so":
                self.err(dw, "LD_PRELOAD %s is not libpushprof_preload.so" % pre)
            groups = " ".join(ds.get("SupplementaryGroups", [])).split()
            if group not in groups:
                self.err(dw, "SupplementaryGroups lacks %s, the group of the 0660 socket" % group)
            unit = d.get("Unit", {})
            svcname = os.path.basename(units[0])
            if svcname not in " ".join(unit.get("After", [])).split():
                self.err(dw, "no After=%s: the app could stop after the sidecar" % svcname)
            if svcname not in " ".join(unit.get("Wants", []) + unit.get("Requires", [])).split():
                self.err(dw, "no Wants=%s" % svcname)
        sysusers = [p for p in glob.glob(os.path.join(self.dir, "*sysusers*.conf"))]
        if user and not dyn:
            defined = set()
            for p in sysusers:
                for line in open(p):
                    f = line.split()
                    if len(f) >= 2 and f[0] in ("u", "g", "u!"):
                        defined.add(f[1])
            if user not in defined:
                self.err(uw, "User=%s is created by no sysusers.d file here" % user)
        self.systemd_analyze(units[0], dropins)

    def systemd_analyze(self, unit, dropins):
        sa = shutil.which("systemd-analyze")
        if not sa:
            self.notes.append("systemd-analyze not found: the unit's keys were checked in Python only")
            return
        if not os.path.exists(SIDECAR_BIN):
            self.err(unit, "cannot verify: %s not built" % SIDECAR_BIN)
            return
        with tempfile.TemporaryDirectory(prefix="pushprof-sdv-") as t:
            units = os.path.join(t, "units")
            os.makedirs(units)
            name = os.path.basename(unit)
            text = open(unit).read().replace("/usr/local/bin/pushprof-sidecar", os.path.abspath(SIDECAR_BIN))
            open(os.path.join(units, name), "w").write(text)
            targets = [os.path.join(units, name)]
            for i, p in enumerate(dropins):
                app = "pushprofapp%d.service" % i
                open(os.path.join(units, app), "w").write("[Unit]\nDescription=stub\n[Service]\nExecStart=/bin/true\n")
                os.makedirs(os.path.join(units, app + ".d"))
                shutil.copy(p, os.path.join(units, app + ".d", "pushprof.conf"))
                targets.append(os.path.join(units, app))
            env = dict(os.environ, SYSTEMD_UNIT_PATH=units + ":", SYSTEMD_LOG_LEVEL="warning")
            r = subprocess.run([sa, "verify"] + targets, env=env, capture_output=True, text=True, timeout=60)
            lines = [l for l in (r.stdout + r.stderr).splitlines() if l.strip()]
            # Lines about other units (the host's targets) are the machine's business.
            out = [l for l in lines if t in l or "pushprof" in l]
            for l in lines:
                if l not in out:
                    self.notes.append("systemd-analyze verify (not about these files): " + l)
            if r.returncode != 0 or out:
                for l in out or ["exit status %d" % r.returncode]:
                    self.err(self.rel(unit), "systemd-analyze verify: " + l.replace(t, "TMP"))
            else:
                self.notes.append("systemd-analyze verify: unit and app drop-in clean")

    # ------------------------------------------------------------- Dockerfiles
    def check_dockerfiles(self):
        for name, final_user_needed in (("Dockerfile", True), ("Dockerfile.app", True)):
            p = os.path.join(self.dir, name)
            if not os.path.exists(p):
                self.err(name, "missing")
                continue
            text = open(p).read().replace("\\\n", " ")
            froms = re.findall(r"^FROM\s+(\S+)", text, re.M)
            if len(froms) < 2 or not all("bookworm" in f for f in froms):
                self.err(name, "expected a multi-stage build on Debian bookworm, FROM lines: %s" % froms)
            users = re.findall(r"^USER\s+(\S+)", text, re.M)
            if final_user_needed and (not users or users[-1].split(":")[0] in ("0", "root")):
                self.err(name, "the final image does not switch to a non-root USER")
            self.check_image_libraries(
                name, text, [SIDECAR_BIN, SIDECAR_HTTP_MODULE] if name == "Dockerfile" else [PRELOAD_LIB])
            if name == "Dockerfile":
                self.check_image_http_module(name, text)
                if "cmake --build" not in text:
                    self.err(name, "does not build with cmake")
                m = re.search(r"^CMD\s+(\[.*\])\s*$", text, re.M)
                if m:
                    args = yaml.safe_load(m.group(1))
                    for f, _ in self.flags_of(args):
                        self.flag_uses.append((name + " CMD", f))
                    self.sidecar_cmdlines.append((name + " CMD", args))
                if not re.search(r"^ENTRYPOINT\s+\[\"[^\"]*pushprof-sidecar\"\]", text, re.M):
                    self.err(name, "ENTRYPOINT is not pushprof-sidecar")
            else:
                m = re.search(r"LD_PRELOAD=(\S+)", text)
                if not m or m.group(1) not in text.replace("LD_PRELOAD=" + m.group(1), ""):
                    self.err(name, "LD_PRELOAD is not set to the path the library is copied to")

    def check_image_http_module(self, name, text):
        """The final stage copies the sidecar's HTTP module where the sidecar
        looks for it: beside the ENTRYPOINT binary or in ../lib/pushprof."""
        final = re.split(r"^FROM\s", text, flags=re.M)[-1]
        m = re.search(r"^ENTRYPOINT\s+\[\"([^\"]*)\"", final, re.M)
        if not m:
            return  # reported by the ENTRYPOINT check
        bindir = os.path.dirname(m.group(1))
        wanted = {os.path.normpath(bindir), os.path.normpath(os.path.join(bindir, "..", "lib", "pushprof"))}
        module = os.path.basename(SIDECAR_HTTP_MODULE)
        for c in re.finditer(r"^COPY\s+(.*)$", final, re.M):
            words = [w for w in c.group(1).split() if not w.startswith("--")]
            if len(words) < 2 or not any(os.path.basename(w) == module for w in words[:-1]):
                continue
            dest = words[-1]
            dest = os.path.dirname(dest) if os.path.basename(dest) == module else dest
            if os.path.normpath(dest) in wanted:
                return
            self.err(name, "%s is copied to %s; %s looks for it only in %s"
                     % (module, dest, m.group(1), " or ".join(sorted(wanted))))
            return
        self.err(name, "the final stage does not copy %s (s3://, gs://, pyroscope and otlp exports "
                 "would refuse to start)" % module)

    def check_image_libraries(self, name, text, binaries):
        """The final stage installs the Debian package of every library one of
        BINARIES needs (DT_NEEDED), as found on this machine if it is Debian 12."""
        try:
            debian = open("/etc/debian_version").read().strip()
        except OSError:
            debian = ""
        if not debian.startswith("12") or not shutil.which("dpkg") or not shutil.which("objdump"):
            self.notes.append("%s: runtime packages not checked (needs Debian 12 with dpkg and objdump)" % name)
            return
        final = re.split(r"^FROM\s", text, flags=re.M)[-1]
        listed = set()
        for m in re.finditer(r"apt-get install([^&]*)", final):
            listed.update(t for t in m.group(1).split() if not t.startswith("-"))
        for binary in binaries:
            if not os.path.exists(binary):
                self.err(name, "cannot check the runtime packages: %s not built" % binary)
                continue
            needed = needed_packages(binary)
            if not needed:
                self.err(name, "objdump found no NEEDED libraries in %s" % binary)
            for so, pkgs in sorted(needed.items()):
                if not pkgs:
                    self.err(name, "%s needs %s, which no installed Debian package provides" % (binary, so))
                elif not pkgs & (listed | {"libc6"}):
                    self.err(name, "%s needs %s (Debian package %s), not installed in the final stage"
                             % (os.path.basename(binary), so, " or ".join(sorted(pkgs))))

    # ----------------------------------------------------------- real binaries
    def help_flags(self):
        r = subprocess.run([SIDECAR_BIN, "--help"], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            self.err(SIDECAR_BIN, "--help exited %d" % r.returncode)
        return set(re.findall(r"^\s+--([a-z0-9-]+)", r.stdout, re.M)) - {"help", "version"}

    def check_flags(self):
        known = self.help_flags()
        if len(known) < 10:
            self.err(SIDECAR_BIN, "--help lists only %d flags" % len(known))
        if not self.flag_uses:
            self.err(self.dir, "no pushprof-sidecar flags found at all")
        for where, f in self.flag_uses:
            if f not in known:
                self.err(where, "--%s is not a flag pushprof-sidecar --help lists" % f)

    @staticmethod
    def relocate(args, tmp):
        """ARGS with the paths moved into TMP, metrics on any free loopback port."""
        out = []
        for k, v in Checker.flags_of(args):
            if k == "socket":
                v = os.path.join(tmp, "s.sock")
            elif k == "spool":
                v = os.path.join(tmp, "spool")
            elif k == "export":
                v = "file://" + os.path.join(tmp, "out")
            elif k == "metrics-addr":
                v = "127.0.0.1:0"
            elif k == "allow-uid":
                v = str(os.getuid())  # the test's processes push as this user
            elif k in ("ca-file",):
                continue
            out.append("--%s" % k if v is None else "--%s=%s" % (k, v))
        if not any(a.startswith("--metrics-addr") for a in out):
            out.append("--metrics-addr=127.0.0.1:0")
        for k in ("socket", "spool"):
            if not any(a.startswith("--%s=" % k) for a in out):
                out.append("--%s=%s" % (k, os.path.join(tmp, "s.sock" if k == "socket" else "spool")))
        if not any(a.startswith("--export=") for a in out):
            out.append("--export=file://" + os.path.join(tmp, "out"))
        return out

    def start_sidecar(self, where, args, tmp, logname="sidecar.log"):
        """Starts the sidecar with ARGS relocated into TMP; (process, metrics port)."""
        out = self.relocate(args, tmp)
        path = os.path.join(tmp, logname)
        # The sidecar appends (O_APPEND) through its own descriptor and we read
        # the file afresh: seeking a shared descriptor back to 0 to read made
        # its next line overwrite the log's start (a start seen as failed).
        open(path, "wb").close()  # a fresh log: no earlier run's port
        with open(path, "ab") as log:
            p = subprocess.Popen([SIDECAR_BIN] + out, stdout=log, stderr=subprocess.STDOUT,
                                 env=dict(os.environ, NODE_NAME="test-node"))

        def read_log():
            with open(path, errors="replace") as f:
                return f.read()

        port = None
        deadline = time.time() + 15
        try:
            while time.time() < deadline and p.poll() is None:
                text = read_log()
                m = re.search(r'msg="metrics listening".* port=(\d+)', text)
                if m and 'msg="sidecar started"' in text:
                    port = int(m.group(1))
                    break
                time.sleep(0.05)
        except BaseException:
            p.kill()
            raise
        text = read_log()
        if not port:
            if p.poll() is None:
                p.kill()
            p.wait()
            self.err(where, "pushprof-sidecar %s did not start: %s" % (" ".join(out), text.strip()[-500:]))
            return None, None
        return p, port

    @staticmethod
    def stop_sidecar(p):
        p.send_signal(signal.SIGTERM)
        try:
            return p.wait(timeout=40)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return None

    def run_sidecar(self, where, args, tmp):
        """The sidecar starts with ARGS (paths in TMP), answers /healthz, stops with 0."""
        p, port = self.start_sidecar(where, args, tmp)
        if not p:
            return
        ok = False
        try:
            if port:
                try:
                    body = urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=5).read()
                    ok = body.strip() == b"ok"
                except OSError as e:
                    body = str(e).encode()
                if not ok:
                    self.err(where, "started, but /healthz answered %r" % body[:100])
        finally:
            rc = self.stop_sidecar(p)
            if rc != 0:
                self.err(where, "exit status %s after SIGTERM" % rc)

    def app_env(self, env, tmp):
        """The app's PUSHPROF_* with its paths moved into TMP, as relocate() does."""
        e = {"PATH": "/usr/bin:/bin", "LD_PRELOAD": os.path.abspath(PRELOAD_LIB)}
        for k, v in env.items():
            if k == "PUSHPROF_SOCKET":
                v = os.path.join(tmp, "s.sock")
            elif k == "PUSHPROF_SPOOL_DIR":
                v = os.path.join(tmp, "spool")
            elif k == "PUSHPROF_OUTPUT":
                v = os.path.join(tmp, "out-%p.pb.gz")
            e[k] = "" if v is None else str(v)
        return e

    def find_profiles(self, tmp):
        return sorted(glob.glob(os.path.join(tmp, "out", "**", "*.pb.gz"), recursive=True))

    def pprof_ok(self, where, path):
        env = dict(os.environ)
        env.setdefault("HOME", "/root")
        env.setdefault("GOCACHE", "/tmp/pushprof-gocache")
        r = subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "integration", "pprof_check.py"),
                            path, "--min-samples", "1", "--expect-function", "parse_records|compress_blocks"],
                           capture_output=True, text=True, env=env, timeout=120)
        if r.returncode != 0:
            self.err(where, "the exported profile fails go tool pprof checks: %s" % r.stderr.strip()[-400:])

    def check_end_to_end(self, where, args, env):
        """The app (demo_work under the preload library, with the file's
        PUSHPROF_*) pushes to the sidecar started with the file's flags: a
        profile must come out. If the app uses the spool drop-in, the same
        again with the sidecar down at the app's exit, started afterwards."""
        work = os.path.join(BUILD, "examples", "demo_work")
        with tempfile.TemporaryDirectory(prefix="pushprof-deploy-e2e-") as tmp:
            e = self.app_env(env, tmp)
            p, _ = self.start_sidecar(where, args, tmp)
            if not p:
                return
            try:
                r = subprocess.run([work, "0.1"], env=e, capture_output=True, text=True, timeout=90)
            finally:
                rc = self.stop_sidecar(p)
            if "cannot push to the sidecar yet" in r.stderr:
                self.notes.append("end to end skipped: this SDK build cannot push yet (%s)" % where)
                return
            if r.returncode != 0 or rc != 0:
                self.err(where, "app exit %d, sidecar exit %s; app said: %s" % (r.returncode, rc, r.stderr.strip()))
            profs = self.find_profiles(tmp)
            if not profs:
                log = open(os.path.join(tmp, "sidecar.log")).read()
                self.err(where, "no profile exported; app said: %s; sidecar log: %s" % (r.stderr.strip(), log.strip()[-600:]))
                return
            self.pprof_ok(where, profs[0])
            self.e2e_done += 1
            if "PUSHPROF_SPOOL_DIR" not in env:
                return
            for f in profs:
                os.unlink(f)
            os.makedirs(e["PUSHPROF_SPOOL_DIR"], exist_ok=True)
            e["PUSHPROF_EXIT_TIMEOUT_MS"] = "1000"
            r = subprocess.run([work, "0.1"], env=e, capture_output=True, text=True, timeout=90)
            drops = [f for f in os.listdir(e["PUSHPROF_SPOOL_DIR"]) if f.endswith(".push")]
            if not drops:
                self.err(where, "sidecar down at exit: nothing dropped in PUSHPROF_SPOOL_DIR; app said: %s" % r.stderr.strip())
                return
            p, _ = self.start_sidecar(where, args, tmp, "sidecar2.log")
            if not p:
                return
            time.sleep(0.5)
            rc = self.stop_sidecar(p)  # SIGTERM exports the open batch
            profs = self.find_profiles(tmp)
            if not profs:
                log = open(os.path.join(tmp, "sidecar2.log")).read()
                self.err(where, "the drop-in was not exported after the sidecar came back: %s" % log.strip()[-600:])
                return
            self.pprof_ok(where + " (drop-in)", profs[0])
            self.e2e_done += 1

    def check_sdk_env(self, where, env, tmp):
        """The app's PUSHPROF_* through the real preload library: nothing invalid."""
        e = self.app_env(env, tmp)  # no sidecar there
        r = subprocess.run(["/bin/true"], env=e, capture_output=True, text=True, timeout=70)
        if "invalid" in r.stderr or r.returncode != 0:
            self.err(where, "the SDK refuses this environment: %s" % r.stderr.strip())

    def check_env_names(self):
        known = set(re.findall(r'"(PUSHPROF_[A-Z0-9_]+)"', open(os.path.join(SOURCE, "sdk", "env_config.c")).read()))
        if len(known) < 5:
            self.err("sdk/env_config.c", "found only %s" % sorted(known))
        for where, env in self.app_envs:
            if "PUSHPROF_SOCKET" not in env:
                self.err(where, "no PUSHPROF_SOCKET")
            for k in env:
                if k not in known:
                    self.err(where, "%s is not a variable the SDK reads (sdk/env_config.c: %s)"
                             % (k, ", ".join(sorted(known))))

    def check_runtime(self):
        for path in (SIDECAR_BIN, PRELOAD_LIB):
            if not os.path.exists(path):
                self.err(path, "not built (set PUSHPROF_BUILD_DIR)")
                return
        self.check_flags()
        if self.static:
            return
        for i, (where, args) in enumerate(self.sidecar_cmdlines):
            with tempfile.TemporaryDirectory(prefix="pushprof-deploy-") as t:
                self.run_sidecar(where, args, t)
        for where, env in self.app_envs:
            with tempfile.TemporaryDirectory(prefix="pushprof-deploy-") as t:
                self.check_sdk_env(where, env, t)
        if self.e2e and not self.errors:
            for where, args, env in self.pairs:
                self.check_end_to_end(where, args, env)

    def run(self):
        self.check_kubernetes()
        self.check_systemd()
        self.check_dockerfiles()
        self.check_env_names()
        self.check_runtime()
        return self.errors


# ------------------------------------------------------------------ self-test
# (file, old text, new text, words an error must contain, needs processes);
# a list of (old, new) pairs may stand for old and new.
BREAKAGES = [
    ("pod.yaml", "value: /run/pushprof/pushprof.sock", "value: /run/pushprof2/pushprof.sock", "PUSHPROF_SOCKET", False),
    ("pod.yaml", "--socket=/run/pushprof/pushprof.sock", "--socket=/run/pushprof/other.sock", "socket", False),
    ("pod.yaml", "          restartPolicy: Always\n", "", "restartPolicy", False),
    ("pod.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem", False),
    ("pod.yaml", "drop: [ALL]", "drop: [NET_RAW]", "drop lacks ALL", False),
    ("pod.yaml", "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", "allowPrivilegeEscalation", False),
    ("pod.yaml", "runAsUser: 10002", "runAsUser: 0", "root", False),
    ("pod.yaml", "runAsUser: 10001", "runAsUser: 10003", "allow-uid", False),
    ("pod.yaml", "value: /var/lib/pushprof/spool", "value: /var/lib/pushprof/spool2", "PUSHPROF_SPOOL_DIR", False),
    ("pod.yaml", [("        fsGroup: 10000\n", ""),
                  ("runAsUser: 10002\n", "runAsUser: 10002\n            runAsGroup: 10003\n")], "cannot open", False),
    ("pod.yaml", "              mountPath: /run/pushprof\n", "              mountPath: /run/other\n", "no volume", False),
    ("pod.yaml", "            requests:\n              cpu: 10m\n", "            requests:\n", "requests", False),
    ("pod.yaml", "path: /healthz, port: metrics}\n            periodSeconds: 10\n            failureThreshold",
     "path: /health, port: metrics}\n            periodSeconds: 10\n            failureThreshold", "/healthz", False),
    ("pod.yaml", "--metrics-addr=0.0.0.0:9464", "--metrics-addr=127.0.0.1:9464", "loopback", False),
    ("pod.yaml", "--batch-window=60", "--batch-windw=60", "--batch-windw", False),
    ("pod.yaml", "#   - --export=gs:", "#   - --exprt=gs:", "--exprt", False),
    ("pod.yaml", "--batch-window=60", "--batch-window=0", "did not start", True),
    ("pod.yaml", 'value: "10"', 'value: "0"', "PUSHPROF_UPLOAD_PERIOD", True),
    ("pod.yaml", "- name: PUSHPROF_HZ", "- name: PUSHPROF_HERTZ", "PUSHPROF_HERTZ", False),
    ("pod.yaml", "--export=s3://example-profiles/pushprof", "--export=file:///var/lib/pushprof/profiles",
     "not on a writable volume", False),
    ("pod.yaml", "  template:\n", "  template: [\n", "not valid YAML", False),
    ("cronjob.yaml", "              restartPolicy: Always\n", "", "restartPolicy", False),
    ("cronjob.yaml", "value: /run/pushprof/pushprof.sock", "value: /tmp/pushprof.sock", "PUSHPROF_SOCKET", False),
    ("cronjob.yaml", "startupProbe:", "xstartupProbe:", "startupProbe", False),
    ("daemonset.yaml", "supplementalGroups: [10000]", "supplementalGroups: [10001]", "cannot open", False),
    ("daemonset.yaml", "            path: /run/pushprof\n            type: Directory ",
     "            path: /run/pushprof-x\n            type: Directory ", "not the file any sidecar", False),
    ("daemonset.yaml", "add: [CHOWN, FOWNER]", "add: [CHOWN, FOWNER, SYS_ADMIN]", "root", False),
    ("daemonset.yaml", "seccompProfile:\n          type: RuntimeDefault\n      containers:\n        - name: app",
     "seccompProfile:\n          type: Unconfined\n      containers:\n        - name: app", "seccomp", False),
    ("serviceaccount-irsa.yaml", "eks.amazonaws.com/role-arn:", "eks.amazonaws.com/rolearn:", "annotation", False),
    ("serviceaccount-gke.yaml", "--export=gs://", "--export=s3://", "gs://", False),
    ("pushprof-sidecar.service", "ProtectSystem=strict", "ProtectSystem=full", "ProtectSystem", False),
    ("pushprof-sidecar.service", "ProtectSystem=strict", "ProtectSytem=strict", "ProtectSystem", False),
    ("pushprof-sidecar.service", "RuntimeDirectory=pushprof\n", "RuntimeDirectory=pushprof-x\n", "RuntimeDirectory", False),
    ("pushprof-sidecar.service", "StateDirectory=pushprof\n", "StateDirectory=pushprof-x\n", "--spool", False),
    ("pushprof-sidecar.service", "NoNewPrivileges=yes", "NoNewPrivileges=no", "NoNewPrivileges", False),
    ("pushprof-sidecar.service", "RuntimeDirectoryMode=0750", "RuntimeDirectoryMode=0755", "RuntimeDirectoryMode", False),
    ("pushprof-sidecar.service", "RestartSec=2\n", "RestartSec=2\nProtectKernelModules=maybe\n", "systemd-analyze", False),
    ("myapp-pushprof.conf", "SupplementaryGroups=pushprof", "SupplementaryGroups=adm", "SupplementaryGroups", False),
    ("myapp-pushprof.conf", "After=pushprof-sidecar.service", "After=network.target", "After=", False),
    ("pushprof-sidecar.env", "--max-spool-bytes=1GiB", "--max-spool-byte=1GiB", "--max-spool-byte", False),
    ("pushprof-sidecar.env", "--batch-window=60", "--batch-window=sixty", "did not start", True),
    ("Dockerfile", "USER 10002:10000", "USER root", "USER", False),
    ("Dockerfile", " libjansson4 ", " ", "libjansson", False),
    ("Dockerfile", "/pushprof-sidecar-http.so /usr/local/lib/pushprof/",
     "/pushprof-sidecar-http.so /usr/local/lib/", "looks for it only in", False),
    ("Dockerfile", "COPY --from=build /opt/pushprof/lib/pushprof/pushprof-sidecar-http.so",
     "RUN true /opt/pushprof/lib/pushprof/pushprof-sidecar-http.so", "does not copy", False),
    ("Dockerfile.app", " libelf1 ", " ", "libelf", False),
    # Harmless edits ("" = must still pass): the checks are not just failing.
    ("pod.yaml", "      volumes:\n", "      volumes:\n        - name: scratch\n          emptyDir: {}\n", "", False),
    ("pod.yaml", "        fsGroup: 10000\n", "", "", False),
    ("pod.yaml", "runAsUser: 10002\n", "runAsUser: 10002\n            runAsGroup: 10003\n", "", False),
    ("pod.yaml", "--batch-window=60", "--batch-window=2m", "", True),
]


def self_test(directory):
    failures = 0
    for entry in BREAKAGES:
        if entry[2] in ("libjansson", "libelf") and not (shutil.which("dpkg") and shutil.which("objdump")):
            continue  # the runtime-package check needs Debian tools
        if isinstance(entry[1], list):  # (file, [(old, new)...], words, runtime)
            fname, edits, words, runtime = entry
        else:
            fname, old, new, words, runtime = entry
            edits = [(old, new)]
        with tempfile.TemporaryDirectory(prefix="pushprof-deploy-broken-") as t:
            d = os.path.join(t, "deploy")
            shutil.copytree(directory, d)
            p = os.path.join(d, fname)
            text = open(p).read()
            label = "%s: %s" % (fname, "; ".join("%r -> %r" % (o.strip()[:50], n.strip()[:50]) for o, n in edits))
            if any(o not in text for o, _ in edits):
                print("SELF-TEST BROKEN: %s: the text to change is not in the file" % label)
                failures += 1
                continue
            for o, n in edits:
                text = text.replace(o, n, 1)
            open(p, "w").write(text)
            errs = Checker(d, static=not runtime, e2e=False).run()
            if words == "":
                if errs:
                    print("HARMLESS EDIT REFUSED: %s: %s" % (label, errs))
                    failures += 1
                else:
                    print("still ok: %s" % label)
                continue
            hit = [e for e in errs if words in e]
            if not hit:
                print("NOT CAUGHT: %s (errors: %s)" % (label, errs or "none"))
                failures += 1
            else:
                print("caught: %s\n    %s" % (label, hit[0]))
    return failures


class RefusingChecker(Checker):
    """The sidecars admit only a uid other than the test's: nothing can arrive."""

    @staticmethod
    def relocate(args, tmp):
        out = [a for a in Checker.relocate(args, tmp) if not a.startswith("--allow-uid")]
        return out + ["--allow-uid=%d" % (os.getuid() + 4242)]


def main():
    args = sys.argv[1:]
    st = "--self-test" in args
    static = "--static" in args
    args = [a for a in args if a not in ("--self-test", "--static")]
    if len(args) != 1:
        print(__doc__)
        return 2
    c = Checker(args[0], static=static)
    errs = c.run()
    for n in c.notes:
        print("note:", n)
    print("checked: %d sidecar command lines started, %d app environments through the SDK, %d flag uses, "
          "%d profiles delivered end to end" % (0 if static else len(c.sidecar_cmdlines),
                                              0 if static else len(c.app_envs), len(c.flag_uses), c.e2e_done))
    for e in errs:
        print("FAIL:", e)
    if errs:
        return 1
    print("ok: %s" % args[0])
    if st:
        n = self_test(args[0])
        if n:
            print("self-test: %d broken copies not caught" % n)
            return 1
        print("self-test: all %d broken copies caught" % len(BREAKAGES))
        if c.e2e_done:
            r = RefusingChecker(args[0])
            errs = r.run()
            if not any("no profile exported" in e for e in errs):
                print("self-test: end to end passed with sidecars that refuse every push: %s" % errs)
                return 1
            print("self-test: end to end fails when the sidecar refuses the app's pushes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
