-- wrk script: POST the AdmissionReview in the file named by $BODY to
-- /mutate?timeout=10s, as the API server calls a webhook. The file is read
-- once, when wrk loads the script, never per request.
local name = os.getenv("BODY")
if not name or name == "" then
  error("post.lua: set BODY to the AdmissionReview file to send")
end
local f = assert(io.open(name, "rb"))
local body = f:read("*a")
f:close()

wrk.method = "POST"
wrk.path = "/mutate?timeout=10s"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"
