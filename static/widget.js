/*!
 * supportbot customer chat widget: vanilla JavaScript, no dependencies.
 *
 * Embed with one tag:
 *   <script src="https://support.example.com/static/widget.js" defer></script>
 * Optional attributes on that tag:
 *   data-server  base URL of the supportbot server (default: the origin this script was loaded from)
 *   data-title   the panel's title (default "Help")
 *   data-open    "true" opens the panel when the page loads
 *
 * Speaks the websocket protocol described in conversations/chat/protocol.py (endpoint /ws/chat/).
 * Everything renders inside an open Shadow DOM on <div id="supportbot-widget">; server and customer text
 * only ever reaches the page through textContent, never as HTML.
 */
(function () {
  "use strict";

  // document.currentScript is only set while this file first runs: capture it now.
  var script = document.currentScript ||
    (function () {
      var all = document.querySelectorAll("script[src]");
      for (var i = all.length - 1; i >= 0; i--) {
        if (/\/widget\.js(?:[?#]|$)/.test(all[i].src)) return all[i];
      }
      return null;
    })();

  var HOST_ID = "supportbot-widget";
  var MAX_CHARS = 2000;
  var COUNTER_FROM = 1800; // show the character counter from here on
  var TYPING_EVERY_MS = 3000;
  var STAFF_TYPING_MS = 4000;
  var BACKOFF_FIRST_MS = 1000;
  var BACKOFF_MAX_MS = 15000;
  var WELCOME_WAIT_MS = 10000; // a socket that opens but never says welcome is dropped and retried
  var CLIENT_ID = /^[A-Za-z0-9_-]{1,64}$/;
  var LINK_PARAMETER = "supportbot_chat"; // conversations/handoff/notifications.py puts it in e-mailed links
  var MAX_EMAIL_CHARS = 254;
  // What browsers' own type=email check accepts, near enough; the server checks again (conversations/chat/protocol.py).
  var EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;
  var MAX_REASON_CHARS = 300; // a thumbs down's reason, as conversations/chat/protocol.py allows

  var TEXT = {
    launcher: "Chat with us",
    close: "Close chat",
    label: "Your message",
    placeholder: "Ask a question…",
    send: "Send",
    connecting: "Connecting…",
    reconnecting: "Reconnecting…",
    uncovered: "The help centre doesn't cover this.",
    talkToPerson: "Talk to a person",
    personRequested: "A person will follow up here. Until they hand the chat back, the assistant won't answer.",
    emailAsk: "Leave your e-mail address and we'll send the reply there too, with a link back to this chat.",
    emailLabel: "Your e-mail address",
    emailSend: "Send me the reply",
    emailBad: "That doesn't look like an e-mail address; it should look like name@example.com.",
    emailTooLong: "That address is too long (the limit is " + 254 + " characters).",
    emailOffline: "Not connected right now; try again in a moment.",
    followUp: "A person will follow up here.",
    human: "You're now chatting with our support team.",
    assistantBack: "The assistant is back.",
    closed: "This chat has been closed.",
    newChat: "Your previous chat has ended; this is a new one.",
    staffTyping: "Support team is typing…",
    staffLabel: "Support team",
    sources: "Sources",
    rateAsk: "Was this helpful?",
    rateUp: "Helpful",
    rateDown: "Not helpful",
    rateThanks: "Thanks for your feedback.",
    reasonLabel: "What was wrong? (optional)",
    reasonSend: "Send",
    reasonThanks: "Thanks, we'll use that to improve.",
    suggestionLead: "This part of our help centre looks like what you're asking about:",
    suggestionAsk: "Did this answer your question?",
    suggestionYes: "Yes",
    suggestionNo: "No",
    suggestionSaidYes: "Glad that helped. Thanks for letting us know.",
    suggestionSaidNo: "Thanks for letting us know; we've asked a person to help.",
    reasonTooLong: function (n) { return n + " characters; the limit is " + MAX_REASON_CHARS + "."; },
    tooLong: function (n) { return n + " characters over the limit of " + MAX_CHARS + "."; },
    charsLeft: function (n) { return n + (n === 1 ? " character" : " characters") + " left."; },
  };

  // ---------------------------------------------------------------- configuration

  function attr(name) {
    return script ? script.getAttribute(name) : null;
  }

  function resolveServer() {
    var configured = attr("data-server");
    var fallback = script && script.src ? script.src : window.location.href;
    var base;
    try {
      base = new URL(configured && configured.trim() ? configured.trim() : new URL(fallback).origin + "/",
        window.location.href);
    } catch (e) {
      base = new URL(window.location.origin + "/");
    }
    if (base.protocol !== "http:" && base.protocol !== "https:") base = new URL(window.location.origin + "/");
    return base;
  }

  var server = resolveServer();
  var serverBase = server.href;
  var serverOrigin = server.origin;
  var wsUrl = (server.protocol === "https:" ? "wss://" : "ws://") + server.host + "/ws/chat/";
  var title = (attr("data-title") || "").trim() || "Help";
  // The page's own greeting, else the one the server sends in its welcome (the served collection's).
  var pageGreeting = (attr("data-greeting") || "").trim();
  var greeting = pageGreeting ||
    "Ask us anything. Answers come from our help centre, with links to the sources; if it doesn't cover " +
    "your question, a person will help.";
  var openOnLoad = (attr("data-open") || "").trim().toLowerCase() === "true";
  // The host site's signed token for a signed-in customer (customers/tokens.py); none for a guest.
  var customerToken = (attr("data-customer-token") || "").trim() || null;
  var STORAGE_KEY = "supportbot:" + serverOrigin;

  // ---------------------------------------------------------------- persisted state
  // sessionStorage[STORAGE_KEY] = {"token": str|null, "conversation": str|null, "seq": int,
  //                                "unacked": [{"id": str, "text": str}, …]}

  var memoryStore = null; // when sessionStorage is unavailable (privacy mode, sandboxed frame)

  function loadState() {
    var raw = null;
    try {
      raw = window.sessionStorage.getItem(STORAGE_KEY);
    } catch (e) {
      raw = memoryStore;
    }
    var data = null;
    try {
      data = raw ? JSON.parse(raw) : null;
    } catch (e) {
      data = null;
    }
    if (!data || typeof data !== "object") data = {};
    var unacked = Array.isArray(data.unacked) ? data.unacked.filter(function (m) {
      return m && typeof m.id === "string" && CLIENT_ID.test(m.id) && typeof m.text === "string" && m.text;
    }) : [];
    return {
      token: typeof data.token === "string" && data.token ? data.token : null,
      conversation: typeof data.conversation === "string" && data.conversation ? data.conversation : null,
      seq: typeof data.seq === "number" && data.seq >= 0 ? Math.floor(data.seq) : 0,
      unacked: unacked.map(function (m) { return { id: m.id, text: m.text }; }),
    };
  }

  var state = loadState();
  resumeFromLink();

  // An e-mailed staff reply links back here with ?supportbot_chat=<the chat's signed token>: that chat opens.
  // The parameter leaves the address bar at once, so it is not bookmarked, shared or sent on as a referrer.
  function resumeFromLink() {
    var url;
    try {
      url = new URL(window.location.href);
    } catch (e) {
      return;
    }
    var token = (url.searchParams.get(LINK_PARAMETER) || "").trim();
    if (!token || token.length > 500) return;
    state = { token: token, conversation: null, seq: 0, unacked: [] };
    saveState();
    openOnLoad = true;
    url.searchParams.delete(LINK_PARAMETER);
    try {
      window.history.replaceState(window.history.state, "", url.pathname + url.search + url.hash);
    } catch (e) { /* a sandboxed frame: the parameter stays, harmlessly */ }
  }

  function saveState() {
    var raw = JSON.stringify({
      token: state.token,
      conversation: state.conversation,
      seq: state.seq,
      unacked: state.unacked,
    });
    try {
      window.sessionStorage.setItem(STORAGE_KEY, raw);
    } catch (e) {
      memoryStore = raw;
    }
  }

  function newId() {
    var c = window.crypto;
    if (c && typeof c.randomUUID === "function") {
      try {
        return c.randomUUID(); // 36 characters of hex and dashes: matches [A-Za-z0-9_-]{1,64}
      } catch (e) { /* not a secure context: fall through */ }
    }
    var out = "m";
    if (c && typeof c.getRandomValues === "function") {
      var words = new Uint32Array(4);
      c.getRandomValues(words);
      for (var i = 0; i < words.length; i++) out += words[i].toString(36);
    } else {
      for (var j = 0; j < 4; j++) out += Math.floor(Math.random() * 0x100000000).toString(36);
    }
    return out.slice(0, 64);
  }

  // Characters as the server counts them (code points, like Python's len()), not UTF-16 units.
  function codePoints(text) {
    return Array.from(text).length;
  }

  // ---------------------------------------------------------------- styles (inside the shadow root only)

  var CSS = [
    ":host { all: initial; }",
    "*, *::before, *::after { box-sizing: border-box; }",
    "[hidden] { display: none !important; }",
    ".root { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif;",
    "  font-size: 15px; line-height: 1.45; color: #1a1a1a; -webkit-text-size-adjust: 100%; }",
    "button, textarea { font: inherit; color: inherit; }",
    // Browsers without :focus-visible drop this rule and keep their own focus ring.
    ":focus:not(:focus-visible) { outline: none; }",
    ":focus-visible { outline: 3px solid #1a5fd0; outline-offset: 2px; box-shadow: 0 0 0 7px #ffffff; }",
    "a { color: #0b57d0; text-decoration: underline; text-underline-offset: 2px; }",
    "a:hover { color: #083f99; }",

    ".launcher { position: fixed; right: 20px; bottom: 20px; z-index: 2147483000; display: inline-flex;",
    "  align-items: center; gap: 8px; min-height: 48px; padding: 12px 20px; border: 2px solid #ffffff;",
    "  border-radius: 999px; background: #1f4d3a; color: #ffffff; font-weight: 600; cursor: pointer;",
    "  box-shadow: 0 4px 14px rgba(0, 0, 0, 0.25); }",
    ".launcher:hover { background: #173b2c; }",
    ".launcher::before { content: ''; width: 16px; height: 13px; border-radius: 4px 4px 4px 0;",
    "  background: currentColor; opacity: 0.9; }",

    ".panel { position: fixed; right: 20px; bottom: 84px; z-index: 2147483001; display: flex;",
    "  flex-direction: column; width: 370px; max-width: calc(100vw - 40px); height: 560px;",
    "  max-height: calc(100vh - 104px); background: #ffffff; color: #1a1a1a; border: 1px solid #c9cfcc;",
    "  border-radius: 12px; box-shadow: 0 10px 36px rgba(0, 0, 0, 0.28); overflow: hidden; }",
    ".header { display: flex; align-items: center; justify-content: space-between; gap: 8px;",
    "  padding: 10px 10px 10px 16px; background: #1f4d3a; color: #ffffff; }",
    ".title { margin: 0; font-size: 17px; font-weight: 600; line-height: 1.3; overflow-wrap: anywhere; }",
    ".close { flex: none; width: 40px; height: 40px; border: 0; border-radius: 8px; background: transparent;",
    "  color: #ffffff; font-size: 24px; line-height: 1; cursor: pointer; }",
    ".close:hover { background: rgba(255, 255, 255, 0.16); }",
    ".intro { margin: 0; padding: 10px 16px; color: #3f4753; font-size: 13px; border-bottom: 1px solid #e3e6ea; }",
    ".status { margin: 0; padding: 6px 16px; background: #fff4d1; color: #4d3800; font-size: 13px;",
    "  border-bottom: 1px solid #e6d49a; }",

    ".log { flex: 1 1 auto; overflow-y: auto; padding: 12px 12px 4px; display: flex; flex-direction: column;",
    "  gap: 8px; overscroll-behavior: contain; }",
    ".log:focus-visible { outline-offset: -3px; box-shadow: none; }",
    ".bubble { max-width: 86%; padding: 8px 12px; border-radius: 12px; white-space: pre-wrap;",
    "  overflow-wrap: anywhere; }",
    ".bubble .text { margin: 0; }",
    ".customer { align-self: flex-end; background: #1f4d3a; color: #ffffff; border-bottom-right-radius: 4px; }",
    // The state is shown with generated content so that a bubble's textContent stays the message itself.
    ".customer[data-state='pending']::after { content: 'Sending…'; display: block; margin-top: 2px;",
    "  font-size: 12px; color: #d9ebe2; }",
    ".customer[data-state='failed'] { background: #fdecec; color: #1a1a1a; border: 1px solid #9b1c1c; }",
    ".customer[data-state='failed']::after { content: 'Not sent'; display: block; margin-top: 2px;",
    "  font-size: 12px; font-weight: 600; color: #9b1c1c; }",
    ".assistant { align-self: flex-start; background: #f1f3f2; color: #1a1a1a; border-bottom-left-radius: 4px; }",
    ".assistant[aria-busy='true'] .text::after { content: '▍'; margin-left: 1px; color: #4b5563; }",
    ".staff { align-self: flex-start; background: #fff6e0; color: #2e2000; border-left: 4px solid #9a5f00;",
    "  border-bottom-left-radius: 4px; }",
    ".staff .who { display: block; margin-bottom: 2px; font-size: 12px; font-weight: 700; color: #5c3b00; }",
    ".citations { margin: 8px 0 0; padding: 6px 0 0; list-style: none; border-top: 1px solid #d3d9d6;",
    "  font-size: 13px; white-space: normal; }",
    ".citations li { margin: 2px 0; }",
    ".notice { align-self: stretch; margin: 0; padding: 4px 8px; color: #3f4753; font-size: 13px;",
    "  text-align: center; white-space: pre-wrap; overflow-wrap: anywhere; }",
    ".notice.decision { text-align: left; padding: 6px 10px; border: 1px dashed #8a949e; border-radius: 8px;",
    "  background: #fafbfb; }",
    ".notice .handoff { display: inline-block; margin: 6px 0 0; min-height: 36px; padding: 6px 14px;",
    "  border: 2px solid #1f4d3a; border-radius: 8px; background: #ffffff; color: #1f4d3a; font-weight: 600;",
    "  cursor: pointer; }",
    ".notice .handoff:hover { background: #e8f1ec; }",
    // A suggestion: a section quoted as a bordered card, not an answer in a bubble; its question, Yes / No.
    ".assistant.suggestion { max-width: 92%; background: #ffffff; border: 2px solid #1f4d3a; border-radius: 10px; }",
    ".suggestion .lead { font-weight: 600; }",
    ".suggestion .unit { margin: 8px 0 0; padding: 6px 10px; border-left: 4px solid #8fb3a2; background: #f4f8f6;",
    "  border-radius: 0 6px 6px 0; }",
    ".suggestion .section { display: block; margin: 0 0 2px; font-weight: 600; font-size: 14px; }",
    // A procedure's steps and a list's items arrive one a line.
    ".suggestion .quote { margin: 0; white-space: pre-line; }",
    ".suggestion .feedback .ask { flex-basis: 100%; color: #1a1a1a; font-weight: 600; }",
    ".suggestion .feedback .thumb { min-width: 64px; font-weight: 600; }",
    // Thumbs on a reply: one group per reply, the stored rating shown pressed.
    ".feedback { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; margin: 8px 0 0; padding: 6px 0 0;",
    "  border-top: 1px solid #d3d9d6; font-size: 13px; white-space: normal; }",
    ".feedback .ask { color: #3f4753; }",
    ".thumb { min-height: 32px; padding: 2px 10px; border: 1px solid #6b7570; border-radius: 999px;",
    "  background: #ffffff; color: #1a1a1a; font-size: 13px; cursor: pointer; }",
    ".thumb:hover { background: #e8f1ec; }",
    ".thumb[aria-pressed='true'] { background: #1f4d3a; border-color: #1f4d3a; color: #ffffff; font-weight: 600; }",
    ".feedback .said { flex-basis: 100%; color: #3f4753; }",
    ".feedback .said:empty { display: none; }",
    ".reason { display: flex; flex-basis: 100%; flex-direction: column; gap: 4px; }",
    ".reason label { font-size: 12px; font-weight: 600; color: #2b2f33; }",
    ".reason .reason-row { display: flex; gap: 6px; }",
    ".reason input { flex: 1 1 auto; min-width: 0; min-height: 32px; padding: 4px 8px; font: inherit;",
    "  border: 1px solid #6b7570; border-radius: 6px; background: #ffffff; color: #1a1a1a; }",
    ".reason button { flex: none; min-height: 32px; padding: 4px 12px; border: 0; border-radius: 6px;",
    "  background: #1f4d3a; color: #ffffff; font-weight: 600; cursor: pointer; }",
    ".presence { margin: 0; padding: 8px 16px; background: #e9f0fb; color: #14325c; font-size: 13px;",
    "  border-bottom: 1px solid #b9cbe6; }",
    ".contact { align-self: stretch; display: flex; flex-direction: column; gap: 4px; margin: 0; padding: 8px 10px;",
    "  border: 1px solid #b9cbe6; border-radius: 8px; background: #f5f8fd; font-size: 13px; }",
    ".contact label { font-weight: 600; }",
    ".contact .row input { flex: 1 1 auto; min-height: 36px; padding: 4px 8px; border: 1px solid #6b7570;",
    "  border-radius: 6px; font: inherit; }",
    ".contact input[aria-invalid='true'] { border-color: #9b1c1c; }",
    ".contact .row button { min-height: 36px; padding: 4px 12px; border: 0; border-radius: 6px; background: #1f4d3a;",
    "  color: #ffffff; font-weight: 600; cursor: pointer; }",
    ".contact .problem { margin: 0; color: #8a1616; }",
    ".contact .problem:empty { display: none; }",
    ".bubble .person { display: block; margin: 6px 0 0; padding: 2px 10px; min-height: 32px; border: 1px solid #1f4d3a;",
    "  border-radius: 999px; background: #ffffff; color: #1f4d3a; font-size: 13px; cursor: pointer; }",
    ".bubble .person:hover { background: #e8f1ec; }",
    ".error { align-self: stretch; margin: 0; padding: 6px 10px; border-radius: 8px; background: #fdecec;",
    "  color: #8a1616; font-size: 13px; border: 1px solid #e7b3b3; overflow-wrap: anywhere; }",
    ".typing { margin: 0; padding: 2px 16px 4px; min-height: 0; color: #3f4753; font-size: 13px;",
    "  font-style: italic; }",

    ".form { display: flex; flex-direction: column; gap: 4px; padding: 8px 12px 12px;",
    "  border-top: 1px solid #d3d9d6; background: #ffffff; }",
    ".form label { font-size: 13px; font-weight: 600; color: #2b2f33; }",
    ".row { display: flex; gap: 8px; align-items: flex-end; }",
    ".input { flex: 1 1 auto; min-height: 44px; max-height: 140px; padding: 8px 10px; resize: none;",
    "  border: 1px solid #6b7570; border-radius: 8px; background: #ffffff; color: #1a1a1a; }",
    ".input[aria-invalid='true'] { border-color: #9b1c1c; }",
    ".input::placeholder { color: #5f6670; }",
    ".send { flex: none; min-height: 44px; padding: 8px 16px; border: 0; border-radius: 8px; background: #1f4d3a;",
    "  color: #ffffff; font-weight: 600; cursor: pointer; }",
    ".send:hover { background: #173b2c; }",
    ".send:disabled { background: #8d9691; color: #ffffff; cursor: not-allowed; }",
    ".counter { margin: 0; font-size: 12px; color: #3f4753; text-align: right; }",
    ".counter.over { color: #9b1c1c; font-weight: 600; }",
    ".sr-only { position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden;",
    "  clip: rect(0 0 0 0); white-space: nowrap; border: 0; }",

    "@media (prefers-reduced-motion: no-preference) {",
    "  .panel:not([hidden]) { animation: sb-in 160ms ease-out; }",
    "  .launcher { transition: background-color 120ms ease; }",
    "  @keyframes sb-in { from { opacity: 0; transform: translateY(8px); } to { opacity: 1; transform: none; } }",
    "}",
    "@media (max-width: 480px) {",
    "  .panel { top: 0; right: 0; bottom: 0; left: 0; width: 100vw; max-width: none; height: 100vh; height: 100dvh;",
    "    max-height: none; border: 0; border-radius: 0; }",
    "  .launcher { right: 12px; bottom: 12px; }",
    "  .bubble { max-width: 92%; }",
    "}",
    "@media (forced-colors: active) {",
    "  .bubble, .notice.decision, .error, .launcher, .send, .handoff, .thumb { border: 1px solid CanvasText; }",
    "}",
  ].join("\n");

  // ---------------------------------------------------------------- DOM helpers

  function el(tag, props, children) {
    var node = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (key) {
        var value = props[key];
        if (value === null || value === undefined || value === false) return;
        if (key === "text") node.textContent = String(value);
        else if (key === "className") node.className = value;
        else node.setAttribute(key, value === true ? "" : String(value));
      });
    }
    (children || []).forEach(function (child) {
      if (child) node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function safeHref(url) {
    if (typeof url !== "string" || !url) return null;
    try {
      var resolved = new URL(url, serverBase);
      return resolved.protocol === "http:" || resolved.protocol === "https:" ? resolved.href : null;
    } catch (e) {
      return null;
    }
  }

  function str(value) {
    return typeof value === "string" ? value : value === null || value === undefined ? "" : String(value);
  }

  function seqOf(value) {
    return typeof value === "number" && isFinite(value) && value > 0 ? Math.floor(value) : null;
  }

  // ---------------------------------------------------------------- the widget

  var ui = null;           // element references, once mounted
  var isOpen = false;
  var everOpened = false;  // the connection opens when the panel first opens
  var ws = null;
  var connected = false;   // a welcome has arrived on the current socket
  var everConnected = false;
  var firstWelcome = true; // the first welcome of this page load (hello sent after=0)
  var attempt = 0;
  var retryTimer = null;
  var welcomeTimer = null;
  var lastTypingSent = 0;
  var staffTypingTimer = null;
  var pendingHandoff = null;  // the handoff frame asked for while disconnected
  var status = null;       // the conversation's last known status
  var followUpShown = false;
  var ratingsToSend = new Map(); // reply seq → feedback frame chosen while disconnected

  var seen = new Map();          // seq → element rendered for it
  var customerById = new Map();  // client id → customer bubble
  var assistantById = new Map(); // question id → assistant bubble

  function mount() {
    if (document.getElementById(HOST_ID)) return false; // already embedded on this page
    var host = el("div", { id: HOST_ID });
    host.style.cssText = "all: initial; position: static;";
    var root = host.attachShadow({ mode: "open" });
    // A constructed stylesheet is not subject to the host page's CSP; a <style> element would need
    // style-src 'unsafe-inline' there. Older browsers (before Safari 16.4, Firefox 101) get the element.
    if ("adoptedStyleSheets" in root && typeof CSSStyleSheet === "function" && CSSStyleSheet.prototype.replaceSync) {
      var sheet = new CSSStyleSheet();
      sheet.replaceSync(CSS);
      root.adoptedStyleSheets = [sheet];
    } else {
      root.appendChild(el("style", { text: CSS }));
    }

    var launcher = el("button", {
      type: "button", className: "launcher", "data-role": "launcher", "aria-expanded": "false",
      "aria-controls": "sb-panel", text: TEXT.launcher,
    });
    var closeBtn = el("button", {
      type: "button", className: "close", "data-role": "close", "aria-label": TEXT.close, title: TEXT.close,
      text: "×",
    });
    var statusLine = el("p", { className: "status", "data-role": "status", role: "status", hidden: true });
    var log = el("div", {
      className: "log", id: "sb-log", "data-role": "log", role: "log", "aria-live": "polite",
      "aria-relevant": "additions text", "aria-label": "Conversation", tabindex: "0",
    });
    var typing = el("p", { className: "typing", "data-role": "typing", "aria-live": "polite" });
    var input = el("textarea", {
      className: "input", id: "sb-input", "data-role": "input", rows: "2", placeholder: TEXT.placeholder,
      autocomplete: "off", "aria-describedby": "sb-counter",
    });
    var send = el("button", { type: "submit", className: "send", "data-role": "send", text: TEXT.send });
    var counter = el("p", { className: "counter", id: "sb-counter", "data-role": "counter", hidden: true });
    var form = el("form", { className: "form", novalidate: true }, [
      el("label", { for: "sb-input", text: TEXT.label }),
      el("div", { className: "row" }, [input, send]),
      counter,
    ]);
    var intro = el("p", { className: "intro", "data-role": "intro", text: greeting });
    var panel = el("div", {
      className: "panel", id: "sb-panel", "data-role": "panel", role: "dialog", "aria-modal": "false",
      "aria-labelledby": "sb-title", hidden: true,
    }, [
      el("div", { className: "header" }, [el("h2", { className: "title", id: "sb-title", text: title }), closeBtn]),
      intro,
      statusLine,
      log,
      typing,
      form,
    ]);
    var wrapper = el("div", { className: "root" }, [panel, launcher]);
    root.appendChild(wrapper);

    launcher.addEventListener("click", function () {
      if (isOpen) closePanel(true); else openPanel();
    });
    closeBtn.addEventListener("click", function () { closePanel(true); });
    panel.addEventListener("keydown", function (event) {
      if (event.key === "Escape" || event.key === "Esc") {
        event.preventDefault();
        closePanel(true);
      }
    });
    // Keys typed into the widget are the widget's: keep the host page's shortcuts from seeing them.
    ["keydown", "keyup", "keypress"].forEach(function (type) {
      wrapper.addEventListener(type, function (event) { event.stopPropagation(); });
    });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      submit();
    });
    input.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229) {
        event.preventDefault();
        submit();
      }
    });
    input.addEventListener("input", function () {
      updateCounter();
      maybeSendTyping();
    });

    document.body.appendChild(host);
    ui = { host: host, root: root, launcher: launcher, panel: panel, closeBtn: closeBtn, status: statusLine,
      intro: intro, log: log, typing: typing, input: input, send: send, counter: counter };

    window.addEventListener("online", function () {
      if (retryTimer !== null) {
        clearTimeout(retryTimer);
        retryTimer = null;
        connect();
      }
    });
    return true;
  }

  function openPanel(focus) {
    if (!ui) return;
    var first = !everOpened;
    everOpened = true;
    isOpen = true;
    ui.panel.hidden = false;
    ui.launcher.setAttribute("aria-expanded", "true");
    if (first) {
      restorePending();
      connect();
    }
    updateStatusLine();
    scrollToEnd(true);
    if (focus !== false) ui.input.focus();
  }

  function closePanel(returnFocus) {
    if (!ui) return;
    var focusInside = ui.panel.contains(ui.root.activeElement);
    isOpen = false;
    ui.panel.hidden = true;
    ui.launcher.setAttribute("aria-expanded", "false");
    if (returnFocus || focusInside) ui.launcher.focus();
  }

  // ---------------------------------------------------------------- connection

  function connect() {
    if (retryTimer !== null) {
      clearTimeout(retryTimer);
      retryTimer = null;
    }
    connected = false;
    updateStatusLine();
    var socket;
    try {
      socket = new WebSocket(wsUrl);
    } catch (e) {
      scheduleReconnect();
      return;
    }
    ws = socket;
    socket.onopen = function () {
      if (ws !== socket) return;
      // A fresh page load asks for the whole history (after=0) and de-duplicates by seq; a reconnect
      // within the page asks only for what came after the last seq shown.
      var after = firstWelcome ? 0 : state.seq;
      sendFrame({ type: "hello", token: state.token, after: after, customer_token: customerToken }, socket);
      clearTimeout(welcomeTimer);
      welcomeTimer = setTimeout(function () {
        if (ws === socket && !connected) dropSocket(socket);
      }, WELCOME_WAIT_MS);
    };
    socket.onmessage = function (event) {
      if (ws !== socket) return;
      var frame;
      try {
        frame = JSON.parse(event.data);
      } catch (e) {
        return; // not JSON: ignore
      }
      if (!frame || typeof frame !== "object" || Array.isArray(frame)) return;
      try {
        handleFrame(frame);
      } catch (e) {
        if (window.console && console.error) console.error("supportbot widget: could not handle a frame", e);
      }
    };
    socket.onclose = function () {
      if (ws !== socket) return;
      ws = null;
      connected = false;
      clearTimeout(welcomeTimer);
      scheduleReconnect();
    };
    socket.onerror = function () { /* a close event follows */ };
  }

  function dropSocket(socket) {
    ws = null;
    connected = false;
    try {
      socket.close();
    } catch (e) { /* already closing */ }
    scheduleReconnect();
  }

  function scheduleReconnect() {
    connected = false;
    updateStatusLine();
    if (retryTimer !== null) return;
    var base = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * Math.pow(2, attempt));
    var delay = Math.min(BACKOFF_MAX_MS, Math.round(base * (0.75 + Math.random() * 0.5)));
    attempt += 1;
    retryTimer = setTimeout(function () {
      retryTimer = null;
      connect();
    }, delay);
  }

  function sendFrame(frame, socket) {
    var target = socket || ws;
    if (!target || target.readyState !== 1) return false;
    try {
      target.send(JSON.stringify(frame));
      return true;
    } catch (e) {
      return false;
    }
  }

  function updateStatusLine() {
    if (!ui) return;
    if (connected || !everOpened) {
      ui.status.hidden = true;
      ui.status.textContent = "";
      return;
    }
    ui.status.textContent = everConnected ? TEXT.reconnecting : TEXT.connecting;
    ui.status.hidden = false;
  }

  // ---------------------------------------------------------------- frames from the server

  function handleFrame(frame) {
    switch (frame.type) {
      case "welcome": return onWelcome(frame);
      case "ack": return onAck(frame);
      case "token": return onToken(frame);
      case "reset": return onReset(frame);
      case "reply": return onReply(frame, false);
      case "message": return onMessage(frame, false);
      case "typing": return onTyping(frame);
      case "status":
        handoffStateFrom(frame);
        onStatus(str(frame.status));
        return offerContact();
      case "contact": return onContactSaved(frame);
      case "error": return frame.code === "bad_email" && contactForm ? contactProblem(str(frame.message)) : onError(frame);
      case "feedback": return onFeedback(frame);
      // The assistant is answering others first ("queued", with a place in line) or the line is full
      // ("busy": the message is kept and goes in as soon as there is room).
      case "queued":
      case "busy": return notice(str(frame.message));
      default: return undefined; // unknown frame types are ignored
    }
  }

  function onWelcome(frame) {
    var conversation = str(frame.conversation) || null;
    // A chat whose first message never reached the server was never stored, and a new id for it is no news.
    if (state.conversation && conversation && conversation !== state.conversation && state.seq > 0) {
      // The old chat could not be resumed (expired token): start the log afresh; unsent messages stay.
      clearHistory();
      state.seq = 0;
      status = null;
      followUpShown = false;
      notice(TEXT.newChat);
    }
    if (typeof frame.token === "string" && frame.token) state.token = frame.token;
    if (conversation) state.conversation = conversation;
    saveState();
    handoffStateFrom(frame);
    if (!pageGreeting && str(frame.greeting)) {
      greeting = str(frame.greeting);
      if (ui) ui.intro.textContent = greeting;
    }

    var messages = Array.isArray(frame.messages) ? frame.messages.slice() : [];
    messages.sort(function (a, b) { return (seqOf(a && a.seq) || 0) - (seqOf(b && b.seq) || 0); });
    messages.forEach(function (m) {
      if (m && typeof m === "object") onMessage(m, true);
    });
    if (typeof frame.status === "string" && frame.status) onStatus(frame.status);
    offerContact();

    clearTimeout(welcomeTimer);
    connected = true;
    everConnected = true;
    firstWelcome = false;
    attempt = 0;
    updateStatusLine();

    // Resend every unacknowledged message with its own id: the server acknowledges a resent id again
    // and answers it once.
    state.unacked.forEach(function (m) {
      sendFrame({ type: "message", id: m.id, text: m.text });
    });
    // The rating first: a suggestion declined offline is rated down, then handed off, as when connected.
    sendWaitingRatings();
    if (pendingHandoff && sendFrame(pendingHandoff)) pendingHandoff = null;
    scrollToEnd(false);
  }

  function onAck(frame) {
    var id = str(frame.id);
    var seq = seqOf(frame.seq);
    var before = state.unacked.length;
    state.unacked = state.unacked.filter(function (m) { return m.id !== id; });
    var bubble = customerById.get(id);
    if (bubble && seq !== null) {
      var existing = seen.get(seq);
      if (existing && existing !== bubble) {
        // Already shown from the history (stored before a reload or a lost ack): keep that one.
        bubble.remove();
        existing.setAttribute("data-id", id);
        customerById.set(id, existing);
      } else {
        markSent(bubble, seq);
      }
    } else if (bubble) {
      markSent(bubble, null);
    }
    if (seq !== null) bumpSeq(seq);
    if (before !== state.unacked.length || seq !== null) saveState();
  }

  function onToken(frame) {
    var id = str(frame.id);
    if (!id) return;
    var bubble = assistantById.get(id);
    if (bubble && bubble.getAttribute("data-decision")) return; // already answered
    if (!bubble) bubble = assistantBubble(id, null);
    var stick = nearBottom();
    bubble._text = (bubble._text || "") + str(frame.text);
    bubble._textNode.textContent = bubble._text;
    scrollToEnd(stick);
  }

  function onReset(frame) {
    var bubble = assistantById.get(str(frame.id));
    if (!bubble || bubble.getAttribute("data-decision")) return;
    bubble._text = "";
    bubble._textNode.textContent = "";
  }

  // A reply frame, or an assistant reply in welcome.messages (fromHistory).
  function onReply(frame, fromHistory) {
    var id = str(frame.id);
    var seq = seqOf(frame.seq);
    if (seq !== null && seen.has(seq)) return;
    var bubble = id ? assistantById.get(id) : null;
    if (bubble && bubble.getAttribute("data-decision")) {
      if (seq !== null) {
        seen.set(seq, bubble);
        bumpSeq(seq);
      }
      return;
    }
    var stick = nearBottom();
    if (!bubble) bubble = assistantBubble(id, seq);
    else if (seq !== null) {
      bubble.remove();
      place(bubble, seq);
    }
    finishReply(bubble, frame);
    if (bubble.getAttribute("data-decision") === "answered") personButton(bubble);
    if (seq !== null) {
      if (bubble.getAttribute("data-decision") === "suggested") suggestionControls(bubble, seq, frame.rating);
      else feedbackControls(bubble, seq, frame.rating);
      bubble.setAttribute("data-seq", String(seq));
      seen.set(seq, bubble);
      bumpSeq(seq);
      saveState();
    }
    var decision = bubble.getAttribute("data-decision");
    if (decision === "abstained") {
      insertAfter(bubble, abstainedNote(id));
    } else if (decision === "referred") {
      if (!followUpShown) {
        followUpShown = true;
        insertAfter(bubble, decisionNote(TEXT.followUp));
      }
    }
    scrollToEnd(stick);
  }

  function finishReply(bubble, frame) {
    var text = str(frame.text);
    var decision = str(frame.decision) || "answered";
    var citations = Array.isArray(frame.citations) ? frame.citations.filter(function (c) {
      return c && typeof c === "object";
    }) : [];
    var links = new Map();
    citations.forEach(function (c) {
      var href = safeHref(c.url);
      if (href && typeof c.number === "number") links.set(String(c.number), { href: href, citation: c });
    });
    bubble._text = text;
    var textNode = bubble._textNode;
    textNode.textContent = "";
    var units = Array.isArray(frame.units) ? frame.units.filter(function (u) {
      return u && typeof u === "object" && str(u.text).trim();
    }) : [];
    if (decision === "suggested" && units.length) {
      // The card is built from the units; the stored text says the same for e-mail and the staff transcript.
      suggestionCard(bubble, units, links);
    } else {
      withMarkers(textNode, text, links);
    }

    var old = bubble.querySelector("[data-role='citations']");
    if (old) old.remove();
    // A suggestion's sections are linked at their headings already.
    if (citations.length && decision !== "suggested") {
      var list = el("ol", { className: "citations", "data-role": "citations", "aria-label": TEXT.sources });
      citations.forEach(function (c) {
        var label = citationLabel(c);
        var href = safeHref(c.url);
        var item = el("li", typeof c.number === "number" && c.number > 0 ? { value: String(c.number) } : null);
        item.appendChild(href ? el("a", { href: href, target: "_blank", rel: "noopener", text: label })
          : el("span", { text: label }));
        list.appendChild(item);
      });
      bubble.appendChild(list);
    }
    bubble.setAttribute("data-decision", decision);
    bubble.setAttribute("aria-busy", "false");
  }

  // Text with its inline [n] markers kept as text, linked to their source where the citation has one.
  function withMarkers(node, text, links) {
    var marker = /\[(\d{1,4})\]/g;
    var last = 0;
    var match;
    while ((match = marker.exec(text)) !== null) {
      var link = links.get(match[1]);
      if (!link) continue;
      if (match.index > last) node.appendChild(document.createTextNode(text.slice(last, match.index)));
      node.appendChild(el("a", {
        href: link.href, target: "_blank", rel: "noopener", className: "ref",
        title: citationLabel(link.citation), text: match[0],
      }));
      last = match.index + match[0].length;
    }
    if (last < text.length) node.appendChild(document.createTextNode(text.slice(last)));
    return node;
  }

  // The lead line, then each quoted unit under its section's heading, linked to the section.
  function suggestionCard(bubble, units, links) {
    bubble.classList.add("suggestion");
    bubble._textNode.classList.add("lead");
    bubble._textNode.textContent = TEXT.suggestionLead;
    var old = bubble.querySelector("[data-role='units']");
    if (old) old.remove();
    var list = el("div", { className: "units", "data-role": "units" });
    units.forEach(function (u) {
      var heading = str(u.heading_path).trim() || str(u.title).trim();
      var href = safeHref(u.url);
      var unit = el("div", { className: "unit", "data-role": "unit", "data-kind": str(u.kind) || null });
      if (heading) {
        unit.appendChild(href ? el("a", { className: "section", "data-role": "unit-section", href: href,
          target: "_blank", rel: "noopener", title: str(u.title).trim() || null, text: heading })
          : el("span", { className: "section", "data-role": "unit-section", text: heading }));
      }
      unit.appendChild(withMarkers(el("p", { className: "quote", "data-role": "unit-text" }), str(u.text), links));
      list.appendChild(unit);
    });
    bubble._textNode.after(list);
  }

  function citationLabel(c) {
    var title = str(c.title).trim();
    var label = "[" + str(c.number) + "] " + (title || "Source");
    // A heading path starts with the article's own heading, usually its title: say that only once.
    var headings = str(c.heading_path).split(" › ").map(function (h) { return h.trim(); }).filter(Boolean);
    if (headings.length && headings[0] === title) headings.shift();
    if (headings.length) label += " › " + headings.join(" › ");
    var version = str(c.version).trim();
    if (version) label += " (" + (/^v/i.test(version) ? version : "v" + version) + ")";
    return label;
  }

  // A message frame, or an entry of welcome.messages (fromHistory).
  function onMessage(frame, fromHistory) {
    var role = str(frame.role);
    // The history carries a reply as the reply frame that first sent it (type "reply", no role).
    if (role === "assistant" || frame.type === "reply") return onReply(frame, fromHistory);
    var seq = seqOf(frame.seq);
    if (seq !== null && seen.has(seq)) return;
    var stick = nearBottom();
    var id = typeof frame.id === "string" && frame.id ? frame.id : null;
    var bubble;
    if (role === "customer") {
      var pending = id ? customerById.get(id) : null;
      if (pending && !pending.hasAttribute("data-seq")) {
        // Our own pending message, already stored: it only lacked its ack.
        state.unacked = state.unacked.filter(function (m) { return m.id !== id; });
        markSent(pending, seq);
        if (seq !== null) {
          pending.remove();
          place(pending, seq);
        }
        bubble = pending;
      } else {
        bubble = customerBubble(str(frame.text), id, seq, "sent");
      }
    } else if (role === "staff") {
      bubble = el("div", { className: "bubble staff", "data-role": "staff" }, [
        el("span", { className: "who", text: staffLabel(frame.author) }),
        el("p", { className: "text", text: str(frame.text) }),
      ]);
      if (id) bubble.setAttribute("data-id", id);
      if (seq !== null) bubble.setAttribute("data-seq", String(seq));
      place(bubble, seq);
      if (!fromHistory) hideStaffTyping();
    } else {
      return; // a role this widget does not know: ignore
    }
    if (seq !== null) {
      seen.set(seq, bubble);
      bumpSeq(seq);
    }
    saveState();
    scrollToEnd(stick || (!fromHistory && role === "customer"));
  }

  function staffLabel(author) {
    var name = str(author).trim();
    return name ? TEXT.staffLabel + " · " + name : TEXT.staffLabel;
  }

  function onTyping(frame) {
    if (frame.role !== "staff" || !ui) return;
    ui.typing.textContent = TEXT.staffTyping;
    if (staffTypingTimer !== null) clearTimeout(staffTypingTimer);
    staffTypingTimer = setTimeout(hideStaffTyping, STAFF_TYPING_MS);
  }

  function hideStaffTyping() {
    if (staffTypingTimer !== null) clearTimeout(staffTypingTimer);
    staffTypingTimer = null;
    if (ui) ui.typing.textContent = "";
  }

  function onStatus(next) {
    if (!next) return;
    var previous = status;
    status = next;
    if (next === "referred") {
      if (!followUpShown) {
        followUpShown = true;
        notice(TEXT.followUp);
      }
      return;
    }
    if (next === previous) return;
    if (next === "human") {
      followUpShown = false;
      notice(TEXT.human);
    } else if (next === "open") {
      followUpShown = false;
      if (previous === "human") notice(TEXT.assistantBack);
    } else if (next === "closed") {
      followUpShown = false;
      notice(TEXT.closed);
    }
  }

  function onError(frame) {
    var message = str(frame.message).trim() || "Something went wrong.";
    var id = typeof frame.id === "string" ? frame.id : "";
    var stick = nearBottom();
    if (id) {
      var removed = state.unacked.some(function (m) { return m.id === id; });
      state.unacked = state.unacked.filter(function (m) { return m.id !== id; });
      if (removed) saveState();
      var bubble = customerById.get(id);
      if (bubble && bubble.getAttribute("data-state") === "pending") bubble.setAttribute("data-state", "failed");
    }
    var node = el("p", { className: "error", "data-role": "error", role: "alert", text: message });
    if (id) node.setAttribute("data-id", id);
    ui.log.appendChild(node);
    scrollToEnd(true);
  }

  // ---------------------------------------------------------------- log rendering

  function customerBubble(text, id, seq, state_) {
    var bubble = el("div", { className: "bubble customer", "data-role": "customer", "data-state": state_ }, [
      el("p", { className: "text", text: text }),
    ]);
    if (id) {
      bubble.setAttribute("data-id", id);
      if (!customerById.has(id)) customerById.set(id, bubble);
    }
    if (seq !== null) bubble.setAttribute("data-seq", String(seq));
    place(bubble, seq);
    return bubble;
  }

  function markSent(bubble, seq) {
    bubble.setAttribute("data-state", "sent");
    if (seq !== null) {
      bubble.setAttribute("data-seq", String(seq));
      seen.set(seq, bubble);
    }
  }

  function assistantBubble(id, seq) {
    var textNode = el("p", { className: "text" });
    var bubble = el("div", { className: "bubble assistant", "data-role": "assistant", "aria-busy": "true" }, [
      textNode,
    ]);
    bubble._textNode = textNode;
    bubble._text = "";
    if (id) {
      bubble.setAttribute("data-id", id);
      assistantById.set(id, bubble);
    }
    place(bubble, seq);
    return bubble;
  }

  function abstainedNote(id) {
    var node = decisionNote(TEXT.uncovered);
    var button = el("button", { type: "button", className: "handoff", "data-role": "handoff",
      text: TEXT.talkToPerson });
    if (id) button.setAttribute("data-id", id);
    button.addEventListener("click", function () {
      requestHandoff(null);
      markPersonRequested();
      var done = decisionNote(TEXT.followUp);
      node.replaceWith(done);
      followUpShown = true;
      if (isOpen && ui) ui.input.focus();
    });
    node.appendChild(document.createElement("br"));
    node.appendChild(button);
    return node;
  }

  function decisionNote(text) {
    return el("p", { className: "notice decision", "data-role": "notice", text: text });
  }

  function notice(text) {
    if (!ui) return;
    var stick = nearBottom();
    ui.log.appendChild(el("p", { className: "notice", "data-role": "notice", text: text }));
    scrollToEnd(stick);
  }

  // Keep the log in the server's order: a bubble with a seq goes before the first later one, or before
  // what is still in flight (pending customer messages, streaming replies); the rest is appended.
  function place(node, seq) {
    var log = ui.log;
    if (seq !== null && seq !== undefined) {
      var children = log.children;
      for (var i = 0; i < children.length; i++) {
        var child = children[i];
        var childSeq = child.getAttribute("data-seq");
        if (childSeq !== null ? Number(childSeq) > seq : inFlight(child)) {
          log.insertBefore(node, child);
          return;
        }
      }
    }
    log.appendChild(node);
  }

  function inFlight(node) {
    var role = node.getAttribute("data-role");
    return (role === "customer" && node.getAttribute("data-state") === "pending") ||
      (role === "assistant" && node.getAttribute("aria-busy") === "true");
  }

  function insertAfter(anchor, node) {
    if (anchor.parentNode) anchor.parentNode.insertBefore(node, anchor.nextSibling);
    else ui.log.appendChild(node);
  }

  function clearHistory() {
    Array.prototype.slice.call(ui.log.children).forEach(function (child) {
      if (!(child.getAttribute("data-role") === "customer" && child.getAttribute("data-state") === "pending")) {
        child.remove();
      }
    });
    seen.clear();
    assistantById.clear();
    customerById.forEach(function (bubble, id) {
      if (!bubble.isConnected) customerById.delete(id);
    });
  }

  function bumpSeq(seq) {
    if (seq > state.seq) state.seq = seq;
  }

  function nearBottom() {
    if (!ui) return true;
    var log = ui.log;
    return log.scrollHeight - log.scrollTop - log.clientHeight < 48;
  }

  function scrollToEnd(force) {
    if (!ui || !force) return;
    ui.log.scrollTop = ui.log.scrollHeight;
  }

  // Messages typed before a reload that the server never acknowledged: show them again as pending.
  function restorePending() {
    state.unacked.forEach(function (m) {
      if (!customerById.has(m.id)) customerBubble(m.text, m.id, null, "pending");
    });
  }

  // ---------------------------------------------------------------- feedback on replies

  // Thumbs up / down under a stored reply (it has a seq), with an optional reason on a thumbs down.
  function feedbackControls(bubble, seq, rating) {
    var old = bubble.querySelector("[data-role='feedback']");
    if (old) old.remove();
    var up = el("button", { type: "button", className: "thumb", "data-role": "thumb-up", "aria-pressed": "false",
      text: TEXT.rateUp });
    var down = el("button", { type: "button", className: "thumb", "data-role": "thumb-down",
      "aria-pressed": "false", text: TEXT.rateDown });
    var said = el("span", { className: "said", "data-role": "feedback-said", "aria-live": "polite" });
    var inputId = "sb-reason-" + seq;
    var input = el("input", { type: "text", id: inputId, "data-role": "feedback-reason", autocomplete: "off",
      maxlength: String(MAX_REASON_CHARS) });
    var reasonForm = el("form", { className: "reason", "data-role": "feedback-form", novalidate: true,
      hidden: true }, [
      el("label", { for: inputId, text: TEXT.reasonLabel }),
      el("div", { className: "reason-row" }, [
        input,
        el("button", { type: "submit", "data-role": "feedback-send", text: TEXT.reasonSend }),
      ]),
    ]);
    var box = el("div", { className: "feedback", "data-role": "feedback", role: "group",
      "aria-label": TEXT.rateAsk }, [el("span", { className: "ask", text: TEXT.rateAsk }), up, down, said,
      reasonForm]);
    box._up = up;
    box._down = down;
    up.addEventListener("click", function () {
      reasonForm.hidden = true;
      rate(box, seq, "up", "");
      said.textContent = TEXT.rateThanks;
    });
    down.addEventListener("click", function () {
      rate(box, seq, "down", "");
      said.textContent = TEXT.rateThanks;
      reasonForm.hidden = false;
      input.focus();
    });
    reasonForm.addEventListener("submit", function (event) {
      event.preventDefault();
      var reason = cleanText(input.value);
      if (codePoints(reason) > MAX_REASON_CHARS) {
        said.textContent = TEXT.reasonTooLong(codePoints(reason));
        return;
      }
      if (reason) rate(box, seq, "down", reason);
      reasonForm.hidden = true;
      said.textContent = reason ? TEXT.reasonThanks : TEXT.rateThanks;
    });
    bubble.appendChild(box);
    showRating(box, rating === "up" || rating === "down" ? rating : null);
  }

  function showRating(box, rating) {
    box._up.setAttribute("aria-pressed", rating === "up" ? "true" : "false");
    box._down.setAttribute("aria-pressed", rating === "down" ? "true" : "false");
    if (rating) box.setAttribute("data-rating", rating);
    else box.removeAttribute("data-rating");
    if (box._said) box._said(rating);
  }

  // "Did this answer your question?" under a suggestion: the same feedback as the thumbs (Yes is up, No is
  // down), and No asks for a person for this suggestion's question. The answer given shows after a reload.
  function suggestionControls(bubble, seq, rating) {
    var old = bubble.querySelector("[data-role='feedback']");
    if (old) old.remove();
    var yes = el("button", { type: "button", className: "thumb", "data-role": "suggestion-yes",
      "aria-pressed": "false", text: TEXT.suggestionYes });
    var no = el("button", { type: "button", className: "thumb", "data-role": "suggestion-no",
      "aria-pressed": "false", text: TEXT.suggestionNo });
    var said = el("span", { className: "said", "data-role": "feedback-said", "aria-live": "polite" });
    var ask = el("span", { className: "ask", "data-role": "suggestion-ask", text: TEXT.suggestionAsk });
    var box = el("div", { className: "feedback", "data-role": "feedback", role: "group",
      "aria-label": TEXT.suggestionAsk }, [ask, yes, no, said]);
    box._up = yes;
    box._down = no;
    box._said = function (chosen) {
      said.textContent = chosen === "up" ? TEXT.suggestionSaidYes : chosen === "down" ? TEXT.suggestionSaidNo : "";
    };
    yes.addEventListener("click", function () {
      if (box.getAttribute("data-rating") !== "up") rate(box, seq, "up", "");
    });
    no.addEventListener("click", function () {
      if (box.getAttribute("data-rating") === "down") return;
      rate(box, seq, "down", "");
      askForPerson(seq);
    });
    bubble.appendChild(box);
    showRating(box, rating === "up" || rating === "down" ? rating : null);
  }

  function rate(box, seq, rating, reason) {
    var frame = { type: "feedback", seq: seq, rating: rating };
    if (reason) frame.reason = reason;
    showRating(box, rating);
    // Not connected: the latest choice for this reply goes out with the next welcome.
    if (connected && sendFrame(frame)) ratingsToSend.delete(seq);
    else ratingsToSend.set(seq, frame);
  }

  function sendWaitingRatings() {
    ratingsToSend.forEach(function (frame, seq) {
      if (sendFrame(frame)) ratingsToSend.delete(seq);
    });
  }

  // A rating stored by the server: this tab's own, or one given in another tab.
  function onFeedback(frame) {
    var seq = seqOf(frame.seq);
    var bubble = seq !== null ? seen.get(seq) : null;
    var box = bubble ? bubble.querySelector("[data-role='feedback']") : null;
    if (box && (frame.rating === "up" || frame.rating === "down")) showRating(box, frame.rating);
  }

  // ---------------------------------------------------------------- customer actions

  function cleanText(value) {
    // NULs are dropped by the server; lone surrogates (from a broken paste) cannot be stored at all.
    return value.replace(/\u0000/g, "")
      .replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]|[\uD800-\uDFFF]/g, function (m) {
        return m.length === 2 ? m : "\uFFFD";
      })
      .trim();
  }

  function submit() {
    var text = cleanText(ui.input.value);
    if (!text) return;
    if (codePoints(text) > MAX_CHARS) {
      updateCounter();
      ui.input.focus();
      return;
    }
    var id = newId();
    state.unacked.push({ id: id, text: text });
    saveState();
    customerBubble(text, id, null, "pending");
    scrollToEnd(true);
    ui.input.value = "";
    updateCounter();
    // Not connected: it stays pending and goes out with the others once the next welcome arrives.
    if (connected) sendFrame({ type: "message", id: id, text: text });
  }

  // declinedSeq: the suggestion the customer said did not answer (its turn is the one handed off); null for
  // "talk to a person" (the latest turn).
  function requestHandoff(declinedSeq) {
    var frame = { type: "handoff" };
    if (declinedSeq) frame.seq = declinedSeq;
    if (!(connected && sendFrame(frame))) pendingHandoff = frame;
  }

  function maybeSendTyping() {
    if (!connected || !ui.input.value.trim()) return;
    var now = Date.now();
    if (now - lastTypingSent < TYPING_EVERY_MS) return;
    if (sendFrame({ type: "typing" })) lastTypingSent = now;
  }

  function updateCounter() {
    var count = codePoints(cleanText(ui.input.value));
    var over = count > MAX_CHARS;
    ui.send.disabled = over;
    ui.input.setAttribute("aria-invalid", over ? "true" : "false");
    if (count < COUNTER_FROM) {
      ui.counter.hidden = true;
      ui.counter.textContent = "";
      ui.counter.className = "counter";
      return;
    }
    ui.counter.hidden = false;
    ui.counter.className = over ? "counter over" : "counter";
    ui.counter.textContent = (over ? TEXT.tooLong(count - MAX_CHARS) : TEXT.charsLeft(MAX_CHARS - count)) +
      " (" + count + " / " + MAX_CHARS + ")";
  }

  // ---------------------------------------------------------------- reaching a person

  // From welcome and status frames: whether a person is available (and when one will be back), whether the
  // customer asked for one, and whether an e-mail address is stored or can be used at all.
  var handoff = { availability: null, personRequested: false, contactGiven: false, emailReplies: false };
  var contactForm = null; // the e-mail form, while it is shown

  function handoffStateFrom(frame) {
    var a = frame.availability;
    if (a && typeof a === "object") {
      handoff.availability = { available: a.available === true, message: str(a.message) };
    }
    if (typeof frame.person_requested === "boolean") {
      if (handoff.personRequested && !frame.person_requested && frame.type === "status") notice(TEXT.assistantBack);
      handoff.personRequested = frame.person_requested;
      if (frame.person_requested) removePersonButtons();
    }
    if (typeof frame.contact_email === "boolean") handoff.contactGiven = frame.contact_email;
    if (typeof frame.email_replies === "boolean") handoff.emailReplies = frame.email_replies;
    showPresence();
  }

  // The banner under the greeting: said plainly whenever nobody can answer now.
  function showPresence() {
    if (!ui) return;
    if (!ui.presence) {
      ui.presence = el("p", { className: "presence", "data-role": "presence", role: "status", hidden: true });
      ui.panel.insertBefore(ui.presence, ui.status);
    }
    var a = handoff.availability;
    ui.presence.hidden = !a || a.available || !a.message;
    ui.presence.textContent = a && !a.available ? a.message : "";
  }

  // "Talk to a person" under every answered reply, while the customer has not asked for one already.
  function personButton(bubble) {
    if (handoff.personRequested || bubble.querySelector("[data-role='talk-to-person']")) return;
    var button = el("button", { type: "button", className: "person", "data-role": "talk-to-person",
      text: TEXT.talkToPerson });
    button.addEventListener("click", function () { askForPerson(null); });
    bubble.appendChild(button);
  }

  // The customer wants a person ("talk to a person", or No under a suggestion): the request, the notice;
  // the status frame that follows brings the availability and, when nobody can answer, the e-mail form.
  function askForPerson(declinedSeq) {
    requestHandoff(declinedSeq);
    markPersonRequested();
    notice(TEXT.personRequested);
    if (isOpen && ui) ui.input.focus();
  }

  function markPersonRequested() {
    handoff.personRequested = true;
    followUpShown = true;
    removePersonButtons();
  }

  function removePersonButtons() {
    if (!ui) return;
    Array.prototype.slice.call(ui.log.querySelectorAll("[data-role='talk-to-person']")).forEach(function (b) {
      b.remove();
    });
  }

  // Waiting for a person with nobody available: ask once where to send their reply.
  function offerContact() {
    var a = handoff.availability;
    if (contactForm && !contactForm.isConnected) contactForm = null; // the log was cleared (a new chat)
    var waiting = handoff.personRequested || status === "referred" || status === "human";
    if (!ui || contactForm || !waiting || !a || a.available || handoff.contactGiven || !handoff.emailReplies) return;
    var input = el("input", { type: "email", id: "sb-contact", "data-role": "contact-email", autocomplete: "email",
      inputmode: "email", maxlength: String(MAX_EMAIL_CHARS), "aria-describedby": "sb-contact-problem" });
    var problem = el("p", { className: "problem", id: "sb-contact-problem", "data-role": "contact-problem",
      role: "alert" });
    contactForm = el("form", { className: "contact", "data-role": "contact-form", novalidate: true }, [
      el("span", { text: a.message + " " + TEXT.emailAsk }),
      el("label", { for: "sb-contact", text: TEXT.emailLabel }),
      el("div", { className: "row" }, [input, el("button", { type: "submit", "data-role": "contact-send",
        text: TEXT.emailSend })]),
      problem,
    ]);
    contactForm._input = input;
    contactForm._problem = problem;
    contactForm.addEventListener("submit", function (event) {
      event.preventDefault();
      var address = input.value.trim();
      if (codePoints(address) > MAX_EMAIL_CHARS) return contactProblem(TEXT.emailTooLong);
      if (!EMAIL.test(address)) return contactProblem(TEXT.emailBad);
      if (!(connected && sendFrame({ type: "contact", email: address }))) return contactProblem(TEXT.emailOffline);
      contactProblem("");
    });
    var stick = nearBottom();
    ui.log.appendChild(contactForm);
    scrollToEnd(stick || isOpen);
  }

  function contactProblem(message) {
    if (!contactForm) return;
    contactForm._problem.textContent = message;
    contactForm._input.setAttribute("aria-invalid", message ? "true" : "false");
    if (message) contactForm._input.focus();
  }

  function onContactSaved(frame) {
    if (frame.saved !== true) return;
    handoff.contactGiven = true;
    if (contactForm) {
      var done = decisionNote(str(frame.message));
      contactForm.replaceWith(done);
      contactForm = null;
    } else {
      notice(str(frame.message));
    }
  }

  // ---------------------------------------------------------------- start

  function start() {
    if (!document.body || !mount()) return;
    window.SupportbotWidget = Object.freeze({
      open: function () { openPanel(); },
      close: function () { closePanel(false); },
    });
    if (openOnLoad) openPanel(false); // opened for the visitor, without taking focus from the page
  }

  if (document.body) start();
  else document.addEventListener("DOMContentLoaded", start, { once: true });
})();
