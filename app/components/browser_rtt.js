// Browser-side RTT probe for TTFT Planner: a Streamlit components v2 module (our own code, no eval).
//
// For each target URL: n + 1 sequential fetches with a unique query string (no cache, no cookies); the
// first one (DNS + TCP + TLS + request) is dropped. Each kept sample is, by preference,
//   resource-timing:        responseStart − requestStart of the fetch's PerformanceResourceTiming entry
//                           (one request round trip on a warm connection; cross-origin needs the target
//                           to send Timing-Allow-Origin, otherwise the browser zeroes these fields);
//   fetch-performance-now:  the labelled fallback when those fields are hidden: responseEnd − fetchStart
//                           of the same entry (always exposed, even without TAO or CORS), else
//                           performance.now() around fetch() + body read (no-cors responses get no
//                           entry), which adds a few ms of browser overhead. The sample's note says
//                           which clock it used.
// A target without CORS headers is fetched in no-cors mode (an opaque response still times). Redirects
// are followed (the Fetch standard forbids redirect: "manual" in no-cors mode); a followed redirect is
// part of a fallback sample's time, and the note says so when the browser reveals it.
// Failures (network, mixed content, timeout) are samples with an error class.

const VANTAGE_KEY = "ttft-planner.vantage";

function nonce() {
  return Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 10);
}

function withNonce(url, tag) {
  const u = new URL(url, window.location.href);
  u.searchParams.set("ttft_rtt", tag);
  return u.href;
}

function classify(err, url, aborted) {
  if (aborted) return ["timeout", "no response within the timeout"];
  if (window.location.protocol === "https:" && url.startsWith("http:")) {
    return ["blocked", "mixed content: an https page may not fetch an http URL"];
  }
  return ["blocked", "the browser blocked or could not complete the request (network error or a blocker): " + String(err && err.message || err)];
}

function fallbackTiming(e, wallMs) {
  // Without Timing-Allow-Origin the entry still exposes fetchStart and responseEnd (Resource Timing §4.5).
  if (e && e.responseEnd > 0 && e.fetchStart > 0 && e.responseEnd >= e.fetchStart) {
    const redirected = e.redirectEnd > 0 ? " (includes a followed redirect)" : "";
    return { rtt_ms: e.responseEnd - e.fetchStart,
             note: "fallback, no Timing-Allow-Origin: Resource Timing responseEnd − fetchStart" + redirected };
  }
  // An opaque (no-cors) response gets no entry at all in Chromium: the wall clock is all there is.
  return { rtt_ms: wallMs, note: "fallback, no Timing-Allow-Origin: performance.now() around fetch "
                                 + "(adds browser overhead; a followed redirect adds its round trip)" };
}

async function fetchOnce(url, mode, timeoutMs) {
  const tagged = withNonce(url, nonce());
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), timeoutMs);
  const t0 = performance.now();
  try {
    // redirect "follow": the only redirect mode the Fetch standard allows with no-cors ("manual" throws).
    const resp = await fetch(tagged, { mode, cache: "no-store", credentials: "omit", redirect: "follow", signal: ctrl.signal });
    await resp.arrayBuffer();
    const wallMs = performance.now() - t0;
    const entries = performance.getEntriesByName(tagged, "resource");
    const e = entries.length ? entries[entries.length - 1] : null;
    if (e && e.requestStart > 0 && e.responseStart >= e.requestStart) {
      return { ok: true, method: "resource-timing", rtt_ms: e.responseStart - e.requestStart, wall_ms: wallMs };
    }
    const fb = fallbackTiming(e, wallMs);
    return { ok: true, method: "fetch-performance-now", rtt_ms: fb.rtt_ms, wall_ms: wallMs, note: fb.note };
  } catch (err) {
    return { ok: false, err, aborted: ctrl.signal.aborted };
  } finally {
    clearTimeout(timer);
  }
}

// Measure one target: returns kept samples (first dropped) or one failure sample.
export async function measureTarget(target, n, timeoutMs) {
  const samples = [];
  let mode = "cors";
  for (let i = 0; i <= n; i++) {
    let r = await fetchOnce(target.url, mode, timeoutMs);
    if (!r.ok && mode === "cors" && !r.aborted) {
      mode = "no-cors"; // reachable without CORS headers? time it as an opaque response
      r = await fetchOnce(target.url, mode, timeoutMs);
    }
    if (!r.ok) {
      const [cls, detail] = classify(r.err, target.url, r.aborted);
      return [{ region_id: target.region_id, url: target.url, method: "fetch-performance-now", rtt_ms: null,
                error_class: cls, error_detail: detail, measured_at_ms: Date.now() }];
    }
    if (i === 0) continue; // the first fetch pays DNS + TCP + TLS: dropped
    samples.push({ region_id: target.region_id, url: target.url, method: r.method, rtt_ms: r.rtt_ms,
                   wall_ms: r.wall_ms, error_class: null, error_detail: r.note || null, measured_at_ms: Date.now() });
  }
  return samples;
}

// Measure every target in turn (one connection's worth of traffic at a time).
export async function measureTargets(targets, n, timeoutMs, onProgress) {
  if (performance.setResourceTimingBufferSize) performance.setResourceTimingBufferSize(5000);
  const all = [];
  for (const [i, t] of targets.entries()) {
    if (onProgress) onProgress(i, targets.length, t);
    all.push(...(await measureTarget(t, n, timeoutMs)));
    if (performance.clearResourceTimings) performance.clearResourceTimings();
  }
  return all;
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const cfg = data || {};
  const btn = parentElement.querySelector("button.rtt-run");
  const status = parentElement.querySelector(".rtt-status");
  let stored = "";
  try {
    stored = window.localStorage.getItem(VANTAGE_KEY) || "";
    if (cfg.vantage) window.localStorage.setItem(VANTAGE_KEY, cfg.vantage);
  } catch (e) { /* storage disabled: the label then lives in the URL only */ }
  if (!cfg.vantage && stored) setStateValue("remembered_vantage", stored);

  const targets = cfg.targets || [];
  btn.disabled = !cfg.vantage || targets.length === 0;
  status.textContent = !cfg.vantage ? "Label your location first (it is remembered in this browser)."
    : targets.length === 0 ? "Pick regions with a URL to measure."
    : `Measures ${targets.length} target(s) from this browser, ${cfg.n} samples each, as “${cfg.vantage}”.`;
  btn.onclick = async () => {
    btn.disabled = true;
    const runId = nonce();
    const samples = await measureTargets(targets, cfg.n || 10, cfg.timeout_ms || 5000, (i, total, t) => {
      status.textContent = `Measuring ${t.region_id} (${i + 1}/${total})…`;
    });
    const ok = samples.filter((s) => s.error_class === null).length;
    status.textContent = `Done: ${ok} samples from ${targets.length} target(s).`;
    btn.disabled = false;
    setStateValue("result", { run_id: runId, vantage: cfg.vantage, user_agent: navigator.userAgent, samples });
  };
}
