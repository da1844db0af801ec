// Arrow schemas as IPC schema messages: the form in which a transform's declared input and
// output schemas travel with its artifact (the identity section, the registry) and in plans.
// The bytes are what arrow::ipc::SerializeSchema writes and what pyarrow's Schema.serialize()
// writes: an encapsulated Schema flatbuffer message. They come from outside the process, so
// reading them checks them and names their origin.
#pragma once

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace sluice::storage {

/// Encodes `schema` as one IPC schema message.
arrow::Result<std::string> SerializeSchemaMessage(const arrow::Schema& schema);

/// Decodes one IPC schema message; trailing bytes after the message are refused. Errors are
/// Invalid and start with `what`, e.g. "lib.so: identity field 'input_arrow_schema'".
arrow::Result<std::shared_ptr<arrow::Schema>> ReadSchemaMessage(std::string_view bytes,
                                                                std::string_view what);

}  // namespace sluice::storage
