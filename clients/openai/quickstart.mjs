// The README's quick start: an OpenAI client talking to `needle serve`.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.NEEDLE_URL ?? "http://127.0.0.1:8080/v1", apiKey: "none" });
const tools = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the current weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
}];
const r = await client.chat.completions.create({
  model: "needle-mini",
  messages: [{ role: "user", content: "what's the weather in Lagos?" }],
  tools,
});
console.log(r.choices[0].message.tool_calls, r.needle.confidence);
