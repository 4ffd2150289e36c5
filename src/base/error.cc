#include "base/error.h"

namespace needle {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArchive: return "invalid_archive";
    case ErrorCode::kInvalidTokenizer: return "invalid_tokenizer";
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kInvalidJson: return "invalid_json";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kIo: return "io_error";
    case ErrorCode::kBudget: return "budget_exceeded";
    case ErrorCode::kInternal: return "internal_error";
    case ErrorCode::kInvalidCall: return "invalid_call";
    case ErrorCode::kBufferTooSmall: return "buffer_too_small";
    case ErrorCode::kNoModel: return "no_model";
    case ErrorCode::kInvalidState: return "invalid_state";
  }
  return "internal_error";
}

}  // namespace needle
