// Errors that cross layer boundaries. Untrusted input (files, JSON, prompts,
// schemas) never reaches an assert: it throws needle::Error naming the field
// and what was expected. Front ends turn it into a message and an exit code
// (CLI: 2), an error envelope, or a negative C ABI return.
#pragma once

#include <stdexcept>
#include <string>

namespace needle {

// Stable codes: they appear in envelopes (`error_code`) and must not change.
enum class ErrorCode {
  kInvalidArchive,    // a .cact file that fails validation
  kInvalidTokenizer,  // a corrupt tokenizer blob or model
  kInvalidArgument,   // bad CLI flag, config field or API argument
  kInvalidJson,       // malformed JSON input
  kUnsupported,       // a feature the engine does not implement
  kIo,                // a file that cannot be opened, read or written
  kBudget,            // a request that does not fit the memory budget
  kInternal,
  kInvalidCall,       // the generated call failed the post-generation check (SPEC §9)
  kBufferTooSmall,    // a caller's output buffer cannot hold the result
  kNoModel,           // no model loaded and none embedded
  kInvalidState,      // an API used out of order (e.g. complete before init)
};

const char* ErrorCodeName(ErrorCode code);  // e.g. "invalid_archive"

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace needle
