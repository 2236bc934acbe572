"""Writes tests/corpus/errors/: error output shaped like each CLI prints it (from the
agent-CLI notes, agent-clis.md, or marked as a guess), with the expected verdict in a
header. Run it from anywhere: python3 tests/corpus/generate.py. The files are the test
input; this script only keeps them consistent and reviewable."""
import json, os
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "errors")
NOW = 1768478400  # 2026-01-15T12:00:00Z, the corpus test's clock

def j(o): return json.dumps(o, ensure_ascii=False, separators=(",", ":"))

def write(cli, case, expect, origin, stdout=(), stderr=(), exit="1", ended_by=None, reset=None, flags=None, note=None):
    os.makedirs(f"{ROOT}/{cli}", exist_ok=True)
    h = [f"# expect: {expect}", f"# exit: {exit}"]
    if ended_by: h.append(f"# ended_by: {ended_by}")
    if reset: h.append(f"# reset: {reset}")
    if flags: h.append(f"# flags: {flags}")
    h.append(f"# origin: {origin}")
    if note: h.append(f"# note: {note}")
    body = []
    if stdout: body += ["--- stdout", *stdout]
    if stderr: body += ["--- stderr", *stderr]
    with open(f"{ROOT}/{cli}/{case}.txt", "w") as f:
        f.write("\n".join(h + body) + "\n")

# ---------------------------------------------------------------- claude
SID = "4f0b1c2e-9a3d-4c5e-8f61-2b7a9d0e1f23"
C_DOC = "shaped from /work/shared/agent-clis.md (Claude Code 2.1.197, text quoted there); not captured from a real run"
C_GUESS = "guess: wording not recorded in agent-clis.md, shaped from the Anthropic API's public error format; not captured from a real run"
init = j({"type":"system","subtype":"init","cwd":"/tmp/ws","session_id":SID,"tools":["Task","Bash","Glob","Grep","Read","Edit","Write"],"mcp_servers":[],"model":"claude-sonnet-4-5","permissionMode":"acceptEdits","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.197"})
def retry(n, status, err): return j({"type":"system","subtype":"api_retry","attempt":n,"max_retries":2,"retry_delay_ms":500*n,"error_status":status,"error":err,"session_id":SID})
def result(text, status=None, subtype="success", is_error=True):
    o = {"type":"result","subtype":subtype,"is_error":is_error,"duration_ms":4210,"duration_api_ms":0,"num_turns":1,"result":text,"session_id":SID,"total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}
    if status is not None: o["api_error_status"] = status
    return j(o)

write("claude","overloaded_529","environmental provider_overloaded",C_DOC,[init,retry(1,529,"overloaded"),retry(2,529,"overloaded"),
  result("API Error: Repeated 529 Overloaded errors. The API is at capacity right now; please try again later.",529)])
write("claude","overloaded_529_text_only","environmental provider_overloaded",C_DOC+" (api_error_status left out to exercise the text rule)",[init,
  result("API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment.")])
write("claude","server_500","environmental provider_error",C_DOC,[init,retry(1,500,"server_error"),
  result("API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment.",500)])
write("claude","server_500_text_only","environmental provider_error",C_DOC+" (no api_error_status)",[init,
  result("API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment.")])
write("claude","rate_limit_429","environmental rate_limited",C_DOC,[init,retry(1,429,"rate_limit"),
  result("API Error: Request rejected (429) · This request would exceed the rate limit for your organization. Please try again later.",429)])
write("claude","usage_limit_event","environmental rate_limited",C_DOC+"; rate_limit_event fields as listed there",[init,
  j({"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":NOW+5*3600,"rateLimitType":"five_hour","isUsingOverage":False,"overageStatus":"rejected"},"session_id":SID}),
  result("You've hit your limit · resets 5pm (UTC)")], reset="2026-01-15T17:00:00Z rate_limit_event")
write("claude","usage_limit_clock","environmental rate_limited",C_DOC+" (newer text form, reported publicly)",[init,
  result("You've hit your limit · resets 8pm (America/New_York)")], reset="2026-01-16T01:00:00Z reset_clock")
write("claude","usage_limit_epoch","environmental rate_limited",C_DOC+" (older text form, reported publicly)",[init,
  result(f"Claude AI usage limit reached|{NOW+3*3600}")], reset="2026-01-15T15:00:00Z usage_limit_epoch")
write("claude","connection_refused","environmental connection_refused",C_DOC,[init,retry(1,None,"unknown"),retry(2,None,"unknown"),
  result("API Error: Unable to connect to API (ConnectionRefused)")])
write("claude","connection_reset","environmental connection_reset",C_DOC+" (the reset phrase must win over 'unable to connect to api')",[init,
  result("API Error: Unable to connect to API (ECONNRESET)")])
write("claude","dns_failure","environmental dns_failure",C_GUESS+" (by analogy with '(ConnectionRefused)')",[init,
  result("API Error: Unable to connect to API (ENOTFOUND)")])
write("claude","stream_stalled","environmental request_timeout",C_DOC+" ('Request timed out' for a stall or missing headers)",[init,retry(1,None,"unknown"),
  result("API Error: Request timed out.")])
write("claude","auth_401","user_config auth_failed",C_DOC,[init,
  j({"type":"assistant","message":{"model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"Invalid API key · Fix external API key"}]},"error":"authentication_failed","session_id":SID}),
  result("Invalid API key · Fix external API key",401)])
write("claude","auth_401_text_only","user_config auth_failed",C_DOC+" (no status, no synthetic error code)",[init,
  result("Invalid API key · Fix external API key")])
write("claude","forbidden_403","user_config auth_failed",C_GUESS,[init,
  result('API Error: 403 {"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}',403)])
write("claude","billing","user_config billing_disabled",C_GUESS,[init,
  result('API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}',400)])
write("claude","invalid_model","user_config model_invalid",C_GUESS,[init,
  result('API Error: 404 {"type":"error","error":{"type":"not_found_error","message":"model: claude-nope-9"}}',404)])
write("claude","context_too_long","agent context_too_long",C_DOC,[init,
  result("Prompt is too long · the request is ~212000 tokens (limit 200000). Run /compact or start a new session.",400)], flags="fresh")
write("claude","no_such_tool","agent tool_unavailable",C_DOC+"; the tool_use_error wording is from the recovery reference (002_0c955411cd0c31ab.txt)",[init,
  j({"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01A","name":"mcp__ralph__declare_complete","input":{}}]},"session_id":SID}),
  j({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01A","is_error":True,"content":"<tool_use_error>Error: No such tool available: mcp__ralph__declare_complete</tool_use_error>"}]},"session_id":SID}),
  j({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"I could not declare completion."}]},"session_id":SID}),
  result("I could not declare completion.", is_error=False)], exit="0", flags="reset_tools")
write("claude","session_not_found","agent session_not_found",C_DOC+" (resume from another cwd)",
  stderr=[f"No conversation found with session ID: {SID}"], flags="fresh")
write("claude","error_during_execution","agent exit_nonzero",C_GUESS+" (an error result that names no provider failure)",[init,
  j({"type":"result","subtype":"error_during_execution","is_error":True,"errors":["Tool permission request failed: stream closed"],"session_id":SID})])

# ---------------------------------------------------------------- codex
TID = "0199a213-81c0-7800-8aa1-bbab2a035a53"
X_DOC = "shaped from /work/shared/agent-clis.md (Codex CLI 0.171.0, --json, text quoted there); not captured from a real run; no codex parser yet, so the classifier reads the raw lines"
X_GUESS = "guess: wording not recorded in agent-clis.md, shaped from codex --json events and the OpenAI API's public error format; not captured from a real run; no codex parser yet"
X_START = [j({"type":"thread.started","thread_id":TID}), j({"type":"turn.started"})]
X_ERR = ["Reading additional input from stdin..."]
def xerr(msg): return j({"type":"error","message":msg})
def xfail(msg): return j({"type":"turn.failed","error":{"message":msg}})
def xretries(msg, n=3): return [xerr(f"Reconnecting... {i}/{n} ({msg})") for i in range(1, n+1)]
URL = "url: http://127.0.0.1:8089/v1/responses"
def xcase(case, expect, msg, origin=X_DOC, retries=True, **kw):
    write("codex", case, expect, origin, X_START + (xretries(msg) if retries else []) + [xerr(msg), xfail(msg)], X_ERR, **kw)

xcase("overloaded_529","environmental provider_overloaded",f"unexpected status 529 <unknown status code>: Overloaded, {URL}")
xcase("server_500","environmental provider_error","We're currently experiencing high demand, which may cause temporary errors.",
      note="captured counterpart captured_server_500.txt: Codex prints this text for HTTP 500 (with a typographic apostrophe), so it is a provider error, not an overload; 503 and 529 print 'unexpected status 5NN …'")
xcase("rate_limit_429","environmental rate_limited","exceeded retry limit, last status: 429 Too Many Requests", retries=False)
body = '{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at":%d,"resets_in_seconds":%d}}' % (NOW+9000, 9000)
xcase("usage_limit","environmental rate_limited",f"unexpected status 429 Too Many Requests: {body}, {URL}",
      origin="shaped from agent-clis.md ('usage limits carry resets_at / resets_in_seconds in the 429 body', reported publicly); body layout is a guess; no codex parser yet",
      retries=False, reset="2026-01-15T14:30:00Z resets_at")
xcase("connection_refused","environmental connection_refused","Connection failed: error sending request for url (http://127.0.0.1:8089/v1/responses)",
      note="captured counterpart captured_connection_refused.txt: the real text ends at 'error sending request', without the url")
xcase("connection_reset","environmental stream_interrupted","stream disconnected before completion: Transport error: error decoding response body")
xcase("dns_failure","environmental dns_failure","Connection failed: error sending request for url (https://api.openai.invalid/v1/responses): client error (Connect): dns error: failed to lookup address information: Name or service not known", origin=X_GUESS)
xcase("stream_stalled","environmental stream_stalled","stream disconnected before completion: idle timeout waiting for SSE")
xcase("auth_401","user_config auth_failed",f"unexpected status 401 Unauthorized: Incorrect API key provided: dummy. You can find your API key at https://platform.openai.com/account/api-keys., {URL}", retries=False)
xcase("forbidden_403","user_config auth_failed",f"unexpected status 403 Forbidden: Project does not have access to this resource., {URL}", origin=X_GUESS, retries=False)
xcase("quota","user_config billing_disabled","Quota exceeded. Check your plan and billing details.", origin=X_GUESS, retries=False)
xcase("invalid_model","user_config model_invalid",'unexpected status 400 Bad Request: {"error":{"message":"The model `gpt-nope` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}', origin=X_GUESS, retries=False)
xcase("context_too_long","agent context_too_long","Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying.", retries=False, flags="fresh")
write("codex","no_such_tool","agent tool_unavailable",X_GUESS+"; codex's own wording for a missing MCP tool is unknown, this uses the MCP error text of the recovery reference",
  X_START + [j({"type":"item.completed","item":{"id":"item_3","type":"mcp_tool_call","server":"ralph","tool":"declare_complete","status":"failed","error":{"message":"No such tool available: declare_complete"}}}),
             j({"type":"item.completed","item":{"id":"item_4","type":"agent_message","text":"I could not declare completion."}}),
             j({"type":"turn.completed","usage":{"input_tokens":2100,"cached_input_tokens":0,"output_tokens":40,"reasoning_output_tokens":0}})],
  X_ERR, exit="0", flags="reset_tools")
write("codex","session_not_found","agent session_not_found",X_DOC+" (exec resume with an unknown id)",
  stderr=X_ERR + [f"Error: no rollout found for thread id {TID}"], flags="fresh")
write("codex","headers_never_sent","agent stall",X_DOC+" ('a server that never sends headers hangs Codex forever': ralph's stall timeout ends it)",
  X_START, X_ERR, exit="signal 15", ended_by="stall",
  note="an environmental cause that ralph can only see as a stall; the offline probe is what tells them apart")

# ---------------------------------------------------------------- opencode
SES = "ses_4a1b2c3d4e5fZz9YxWvUtSrQpO"
O_DOC = "shaped from /work/shared/agent-clis.md (OpenCode 1.18.33, --format json, error fields and texts quoted there); not captured from a real run; no opencode parser yet, so the classifier reads the raw lines"
O_GUESS = "guess: wording not recorded in agent-clis.md, shaped from OpenCode's --format json error event and the provider's public error format; not captured from a real run; no opencode parser yet"
O_START = [j({"type":"step_start","timestamp":NOW*1000,"sessionID":SES,"part":{"type":"step-start"}})]
def oerr(name, data): return j({"type":"error","timestamp":NOW*1000+900,"sessionID":SES,"error":{"name":name,"data":data}})
def api(msg, status, retryable, body, **extra):
    d = {"message":msg,"statusCode":status,"isRetryable":retryable,"responseBody":body}; d.update(extra); return d
def ocase(case, expect, line, origin=O_DOC, **kw):
    write("opencode", case, expect, origin, O_START + [line], **kw)

O_CAPTURED = "captured counterpart captured_%s.txt (through the openai-compatible provider): no step_start before the error, data also carries responseHeaders and metadata.url"
ocase("overloaded_529","environmental provider_overloaded",oerr("APIError",api("Overloaded",529,True,'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')), origin=O_GUESS+" (status 529 through an anthropic provider)",
      note=O_CAPTURED % "overloaded_529" + "; the message is the body's own")
ocase("server_500","environmental provider_error",oerr("APIError",api("Internal Server Error",500,True,'{"error":{"message":"Internal Server Error","type":"server_error"}}')), origin=O_GUESS,
      note=O_CAPTURED % "server_500" + "; the message is the body's own, not the HTTP reason")
ocase("rate_limit_429","environmental rate_limited",oerr("APIError",api("Rate limit reached for requests. Please try again in 2s.",429,True,'{"error":{"message":"Rate limit reached for requests. Please try again in 2s.","type":"requests","code":"rate_limit_exceeded"}}')),
      reset="2026-01-15T12:00:02Z try_again_in", note=O_CAPTURED % "rate_limit_429")
ocase("usage_limit","environmental rate_limited",oerr("APIError",api("Too Many Requests",429,True,'{"error":{"message":"Too Many Requests"}}',responseHeaders={"retry-after":"120","content-type":"application/json"})),
      origin=O_GUESS+" (a 429 with retry-after in the response headers)", reset="2026-01-15T12:02:00Z retry_after")
ocase("connection_refused","environmental connection_refused",oerr("APIError",{"message":"Cannot connect to API: Unable to connect. Is the computer able to access the url?","isRetryable":True}),
      note="captured counterpart captured_connection_refused.txt: no step_start before the error, data also carries metadata.url; it comes after ~67 s of OpenCode's fixed retries")
write("opencode","connection_reset_loop","agent attempt_timeout",O_DOC+" ('a connection reset mid-stream sends OpenCode into an endless re-request loop': only ralph's timeouts end it)",
  O_START + [j({"type":"step_start","timestamp":NOW*1000+1000*i,"sessionID":SES,"part":{"type":"step-start"}}) for i in range(1,4)],
  exit="signal 15", ended_by="attempt_timeout", note="environmental in truth; ralph's loop and timeout guards see an agent failure")
ocase("dns_failure","environmental dns_failure",oerr("UnknownError",{"message":"getaddrinfo ENOTFOUND api.openai.invalid"}), origin=O_GUESS)
ocase("stream_stalled","environmental stream_stalled",oerr("UnknownError",{"message":"SSE read timed out"}))
ocase("headers_timeout","environmental request_timeout",oerr("UnknownError",{"message":"Provider response headers timed out after 30000ms"}))
ocase("auth_401","user_config auth_failed",oerr("APIError",api("Incorrect API key provided: dummy. You can find your API key at https://platform.openai.com/account/api-keys.",401,False,'{"error":{"message":"Incorrect API key provided: dummy.","type":"invalid_request_error","code":"invalid_api_key"}}')),
      note=O_CAPTURED % "auth_401")
ocase("forbidden_403","user_config auth_failed",oerr("APIError",api("Forbidden",403,False,'{"error":{"message":"Project does not have access to model"}}')), origin=O_GUESS)
ocase("quota","user_config billing_disabled",oerr("APIError",api("You exceeded your current quota, please check your plan and billing details.",429,False,'{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}')), origin=O_GUESS+" (insufficient_quota arrives as a 429: billing must win over rate limit)")
ocase("invalid_model","user_config model_invalid",oerr("ProviderModelNotFoundError",{"providerID":"fake","modelID":"nope","suggestions":[]}), origin=O_GUESS)
ocase("context_too_long","agent context_too_long",oerr("ContextOverflowError",{"message":"prompt exceeds the model's context: 140000 tokens > 128000","responseBody":"{}"}), origin=O_DOC+" (message text is a guess)", flags="fresh")
write("opencode","no_such_tool","agent tool_unavailable",O_GUESS+" (AI SDK NoSuchToolError wording)",
  O_START + [j({"type":"tool_use","timestamp":NOW*1000+500,"sessionID":SES,"part":{"type":"tool","tool":"declare_complete","state":{"status":"error","input":{},"error":"Model tried to call unavailable tool 'declare_complete'. Available tools: bash, edit, write, read."}}}),
             j({"type":"text","timestamp":NOW*1000+800,"sessionID":SES,"part":{"type":"text","text":"I could not declare completion."}}),
             j({"type":"step_finish","timestamp":NOW*1000+900,"sessionID":SES,"part":{"type":"step-finish","reason":"stop","tokens":{"input":1200,"output":30},"cost":0}})],
  exit="0", flags="reset_tools")
write("opencode","session_not_found","agent session_not_found",O_DOC+" (run --session with an unknown id)", stderr=["Error: Session not found"], flags="fresh")

# ---------------------------------------------------------------- gemini
GSID = "b7c2d9e0-1f2a-4b3c-9d8e-7f6a5b4c3d2e"
G_DOC = "shaped from /work/shared/agent-clis.md (Gemini CLI 0.61.0, stream-json, text quoted there); not captured from a real run; no gemini parser yet, so the classifier reads the raw lines"
G_GUESS = "guess: wording not recorded in agent-clis.md, shaped from gemini stream-json events and the Gemini API's public error format; not captured from a real run; no gemini parser yet"
G_INIT = j({"type":"init","timestamp":"2026-01-15T12:00:00.000Z","session_id":GSID,"model":"gemini-2.5-pro"})
STATS = {"total_tokens":0,"input_tokens":0,"output_tokens":0,"duration_ms":812,"tool_calls":0}
def gres(msg, status="error", etype="FatalError"):
    o = {"type":"result","timestamp":"2026-01-15T12:00:01.000Z","status":status,"stats":STATS}
    if msg is not None: o["error"] = {"type":etype,"message":msg}
    return j(o)
def gcase(case, expect, msg, exit, origin=G_DOC, **kw):
    write("gemini", case, expect, origin, [G_INIT, gres(msg)], exit=exit, **kw)

G_CAPTURED = "captured counterpart captured_%s.txt: a user message event before the result, error.type 'unknown' (not FatalError), and on stderr 'Attempt 1 failed: …' and a stack trace"
gcase("overloaded_503","environmental provider_overloaded","[API Error: The model is overloaded. Please try again later.]","247",
      note=G_CAPTURED % "overloaded_503" + "; a 529 (captured_overloaded_529.txt) shows the raw JSON body instead and exits 17")
gcase("server_500","environmental provider_error","[API Error: An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting]","244", origin=G_GUESS,
      note=G_CAPTURED % "server_500" + "; the message is the raw JSON body, '[API Error: {\"error\":{\"code\":500,…,\"status\":\"INTERNAL\"}}]'")
gcase("rate_limit_429","environmental rate_limited","[API Error: Resource has been exhausted (e.g. check quota).]","173",
      note=G_CAPTURED % "rate_limit_429" + "; the message goes on 'Please wait and try again later. To increase your limits, …'")
gcase("usage_limit","environmental rate_limited",'[API Error: {"error":{"code":429,"message":"You exceeded your current quota, please check your plan. Please retry in 34.5s.","status":"RESOURCE_EXHAUSTED"}}]',"173",
      origin=G_GUESS+" (429 with 'Please retry in Ns')", reset="2026-01-15T12:00:35Z retry_in")
gcase("connection_refused","environmental connection_refused","[API Error: exception TypeError: fetch failed sending request]","1",
      note=G_CAPTURED % "connection_refused")
write("gemini","dns_failure","environmental dns_failure",G_GUESS+" (the cause on stderr is a guess)",[G_INIT, gres("[API Error: exception TypeError: fetch failed sending request]")],
      ["Error when talking to Gemini API cause: Error: getaddrinfo ENOTFOUND generativelanguage.googleapis.com"], exit="1")
write("gemini","connection_reset_exit0","environmental stream_interrupted",G_DOC+" (a mid-stream reset exits 0)",[G_INIT,
      j({"type":"message","timestamp":"2026-01-15T12:00:00.500Z","role":"assistant","content":"I'll start by","delta":True}),
      j({"type":"error","timestamp":"2026-01-15T12:00:01.000Z","severity":"error","message":"Model stream ended without a finish reason."}),
      gres(None)], exit="0")
write("gemini","stream_stalled","agent stall",G_DOC+" ('a stalled stream has no timeout of its own': ralph's stall timeout ends it)",[G_INIT,
      j({"type":"message","timestamp":"2026-01-15T12:00:00.500Z","role":"assistant","content":"Looking","delta":True})],
      exit="signal 15", ended_by="stall", note="environmental in truth; without a provider event ralph sees an agent stall")
gcase("auth_401","user_config auth_failed",'[API Error: {"error":{"code":401,"message":"API key not valid. Please pass a valid API key.","status":"UNAUTHENTICATED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}]',"145",
      note=G_CAPTURED % "auth_401")
gcase("forbidden_403","user_config auth_failed",'[API Error: {"error":{"code":403,"message":"Method doesn\'t allow unregistered callers.","status":"PERMISSION_DENIED"}}]',"147", origin=G_GUESS)
gcase("invalid_model","user_config model_invalid",'[API Error: {"error":{"code":404,"message":"models/gemini-nope is not found for API version v1beta, or is not supported for generateContent.","status":"NOT_FOUND"}}]',"148", origin=G_GUESS)
gcase("context_too_long","agent context_too_long",'[API Error: {"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]',"144", origin=G_GUESS, flags="fresh")
write("gemini","no_such_tool","agent tool_unavailable",G_GUESS+" (tool registry message)",[G_INIT,
      j({"type":"tool_use","timestamp":"2026-01-15T12:00:00.400Z","tool_name":"declare_complete","tool_id":"t1","parameters":{}}),
      j({"type":"tool_result","timestamp":"2026-01-15T12:00:00.500Z","tool_id":"t1","status":"error","output":"Tool \"declare_complete\" not found in registry. Tools must use the exact names that are registered."}),
      j({"type":"message","timestamp":"2026-01-15T12:00:00.700Z","role":"assistant","content":"I could not declare completion."}),
      gres(None, status="success")], exit="0", flags="reset_tools")
write("gemini","session_not_found","agent session_not_found",G_DOC+" ('unknown id: exit 42'; the stderr text is not recorded, so the rule uses the exit code)",
      stderr=["(no stderr text recorded for this case)"], exit="42", flags="fresh")

# ---------------------------------------------------------------- ralph's own verdicts
R = "ralph's own situation, expressed through ended_by / exit; the stream is shaped like Claude stream-json (sim speaks it)"
write("ralph","stall","agent stall",R,[init, j({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Let me think."}]},"session_id":SID})], exit="signal 2", ended_by="stall")
write("ralph","stall_in_provider_retry","environmental stall_in_provider_retry",R+" (the CLI's retried provider request hung)",[init, retry(1,529,"overloaded")], exit="signal 2", ended_by="stall")
write("ralph","tool_timeout","agent tool_timeout",R,[init, j({"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_9","name":"Bash","input":{"command":"sleep 9999"}}]},"session_id":SID})], exit="signal 15", ended_by="tool_timeout")
write("ralph","attempt_timeout","agent attempt_timeout",R,[init], exit="signal 15", ended_by="attempt_timeout")
write("ralph","exit0_no_done","agent no_done_signal",R,[init, result("I have made some progress.", is_error=False)], exit="0")
write("ralph","crash_sigkill","agent crashed",R,[init], stderr=["Killed"], exit="signal 9")
write("ralph","crash_sigsegv","agent crashed",R,[init], exit="signal 11")
write("ralph","exit_nonzero","agent exit_nonzero",R,[init], stderr=["Error: something the classifier has no rule for"], exit="2")
write("ralph","binary_missing_bash","user_config binary_missing",R+" (a command agent whose program is not installed)", stderr=["bash: line 1: my-agent: command not found"], exit="127")
write("ralph","binary_missing_dash","user_config binary_missing",R+" (dash wording)", stderr=["sh: 1: my-agent: not found"], exit="127")
write("ralph","error_phrase_in_tool_output","agent no_done_signal",R+" (a failing test suite printing provider-like errors is not a provider failure)",[init,
  j({"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_5","name":"Bash","input":{"command":"cargo test"}}]},"session_id":SID}),
  j({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_5","is_error":True,"content":"thread 'x' panicked: API Error: 500 Internal server error; ECONNREFUSED 127.0.0.1:9; Request timed out"}]},"session_id":SID}),
  j({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"The API Error: 529 Overloaded test fails; Invalid API key handling needs work."}]},"session_id":SID}),
  result("Tests still fail.", is_error=False)], exit="0")
write("codex","retry_notices_then_clean_exit","agent no_done_signal",X_DOC+" (retry notices, then a clean exit without the done tag: the notices are not the failure)",
  stdout=[j({"type":"thread.started","thread_id":TID}), xerr("Reconnecting... 1/5 (stream disconnected before completion: idle timeout waiting for SSE)"), j({"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}})],
  exit="0")
