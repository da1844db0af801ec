// The Arrow projection of schema records (record.hpp): the Arrow schema, and conversion between
// record vectors and record batches. Fields that are std::optional are nullable; every other
// field is non-nullable, and a null in it is an error naming the column and row.
#pragma once

#include <arrow/api.h>

#include <memory>
#include <string>

#include "sluice/schemas/record.hpp"

namespace sluice::schemas {

template <typename T>
std::shared_ptr<arrow::DataType> ArrowType() {
  if constexpr (std::is_same_v<T, bool>) {
    return arrow::boolean();
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return arrow::int32();
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return arrow::int64();
  } else if constexpr (std::is_same_v<T, double>) {
    return arrow::float64();
  } else if constexpr (std::is_same_v<T, std::string>) {
    return arrow::utf8();
  } else if constexpr (std::is_same_v<T, Timestamp>) {
    return arrow::timestamp(arrow::TimeUnit::MICRO, "UTC");
  } else if constexpr (std::is_same_v<T, Digest32>) {
    return arrow::fixed_size_binary(32);
  } else if constexpr (std::is_same_v<T, Bytes>) {
    return arrow::binary();
  } else if constexpr (IsOptional<T>::value) {
    return ArrowType<typename T::value_type>();
  } else if constexpr (IsVector<T>::value) {
    using Item = typename T::value_type;
    return arrow::list(arrow::field("item", ArrowType<Item>(), IsOptional<Item>::value));
  } else {
    static_assert(RecordType<T>, "unsupported schema field type");
    arrow::FieldVector fields;
    ForEachField<T>([&](auto field) {
      using Member = std::remove_reference_t<decltype(std::declval<T&>().*(field.member))>;
      fields.push_back(
          arrow::field(std::string(field.name), ArrowType<Member>(), IsOptional<Member>::value));
    });
    return arrow::struct_(std::move(fields));
  }
}

/// The Arrow schema of a record: one column per field, with the type id as metadata.
template <RecordType T>
std::shared_ptr<arrow::Schema> ArrowSchema() {
  auto type = ArrowType<T>();
  return arrow::schema(type->fields(), arrow::key_value_metadata({"sluice.schema"}, {T::kTypeId}));
}

namespace internal {

template <typename T>
arrow::Status AppendValue(arrow::ArrayBuilder* builder, const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<arrow::BooleanBuilder*>(builder)->Append(v);
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return static_cast<arrow::Int32Builder*>(builder)->Append(v);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return static_cast<arrow::Int64Builder*>(builder)->Append(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return static_cast<arrow::DoubleBuilder*>(builder)->Append(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return static_cast<arrow::StringBuilder*>(builder)->Append(v);
  } else if constexpr (std::is_same_v<T, Timestamp>) {
    return static_cast<arrow::TimestampBuilder*>(builder)->Append(v.micros);
  } else if constexpr (std::is_same_v<T, Digest32>) {
    return static_cast<arrow::FixedSizeBinaryBuilder*>(builder)->Append(v.data());
  } else if constexpr (std::is_same_v<T, Bytes>) {
    return static_cast<arrow::BinaryBuilder*>(builder)->Append(v.data.data(),
                                                               static_cast<int32_t>(v.data.size()));
  } else if constexpr (IsOptional<T>::value) {
    return v.has_value() ? AppendValue(builder, *v) : builder->AppendNull();
  } else if constexpr (IsVector<T>::value) {
    auto* list = static_cast<arrow::ListBuilder*>(builder);
    ARROW_RETURN_NOT_OK(list->Append());
    for (const auto& item : v) ARROW_RETURN_NOT_OK(AppendValue(list->value_builder(), item));
    return arrow::Status::OK();
  } else {
    auto* st = static_cast<arrow::StructBuilder*>(builder);
    ARROW_RETURN_NOT_OK(st->Append());
    arrow::Status status;
    int i = 0;
    ForEachField<T>([&](auto field) {
      if (status.ok()) status = AppendValue(st->field_builder(i), v.*(field.member));
      ++i;
    });
    return status;
  }
}

template <typename T>
arrow::Status ReadValue(const arrow::Array& array, int64_t row, const std::string& path, T* out) {
  if constexpr (IsOptional<T>::value) {
    if (array.IsNull(row)) {
      out->reset();
      return arrow::Status::OK();
    }
    typename T::value_type value{};
    ARROW_RETURN_NOT_OK(ReadValue(array, row, path, &value));
    *out = std::move(value);
    return arrow::Status::OK();
  } else {
    if (array.IsNull(row)) {
      return arrow::Status::Invalid("column ", path, " row ", row,
                                    " is null but the field is "
                                    "not optional");
    }
    if constexpr (std::is_same_v<T, bool>) {
      *out = static_cast<const arrow::BooleanArray&>(array).Value(row);
    } else if constexpr (std::is_same_v<T, int32_t>) {
      *out = static_cast<const arrow::Int32Array&>(array).Value(row);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      *out = static_cast<const arrow::Int64Array&>(array).Value(row);
    } else if constexpr (std::is_same_v<T, double>) {
      *out = static_cast<const arrow::DoubleArray&>(array).Value(row);
    } else if constexpr (std::is_same_v<T, std::string>) {
      *out = std::string(static_cast<const arrow::StringArray&>(array).GetView(row));
    } else if constexpr (std::is_same_v<T, Timestamp>) {
      out->micros = static_cast<const arrow::TimestampArray&>(array).Value(row);
    } else if constexpr (std::is_same_v<T, Digest32>) {
      const uint8_t* bytes = static_cast<const arrow::FixedSizeBinaryArray&>(array).GetValue(row);
      std::copy(bytes, bytes + out->size(), out->begin());
    } else if constexpr (std::is_same_v<T, Bytes>) {
      auto view = static_cast<const arrow::BinaryArray&>(array).GetView(row);
      out->data.assign(view.begin(), view.end());
    } else if constexpr (IsVector<T>::value) {
      const auto& list = static_cast<const arrow::ListArray&>(array);
      const int64_t start = list.value_offset(row), len = list.value_length(row);
      out->resize(static_cast<size_t>(len));
      for (int64_t i = 0; i < len; ++i) {
        ARROW_RETURN_NOT_OK(ReadValue(*list.values(), start + i,
                                      path + "[" + std::to_string(i) + "]",
                                      &(*out)[static_cast<size_t>(i)]));
      }
    } else {
      const auto& st = static_cast<const arrow::StructArray&>(array);
      arrow::Status status;
      int i = 0;
      ForEachField<T>([&](auto field) {
        if (status.ok()) {
          status = ReadValue(*st.field(i), row, path + "." + std::string(field.name),
                             &(out->*(field.member)));
        }
        ++i;
      });
      return status;
    }
    return arrow::Status::OK();
  }
}

inline std::string FieldList(const arrow::Schema& schema) {
  std::string out = "[";
  for (int i = 0; i < schema.num_fields(); ++i) {
    if (i > 0) out += ", ";
    out += schema.field(i)->name() + ": " + schema.field(i)->type()->ToString();
  }
  return out + "]";
}

}  // namespace internal

/// Checks that a batch's schema has T's columns with T's types (nullability and metadata are
/// not compared; nulls are checked value by value on read).
template <RecordType T>
arrow::Status CheckArrowSchema(const arrow::Schema& actual, std::string_view where) {
  auto expected = ArrowSchema<T>();
  bool same = actual.num_fields() == expected->num_fields();
  for (int i = 0; same && i < actual.num_fields(); ++i) {
    same = actual.field(i)->name() == expected->field(i)->name() &&
           actual.field(i)->type()->Equals(*expected->field(i)->type(), /*check_metadata=*/false);
  }
  if (same) return arrow::Status::OK();
  return arrow::Status::TypeError(where, ": schema mismatch for ", T::kTypeId, ": expected ",
                                  internal::FieldList(*expected), ", got ",
                                  internal::FieldList(actual));
}

/// Builds one record batch from records.
template <RecordType T>
arrow::Result<std::shared_ptr<arrow::RecordBatch>> ToRecordBatch(const std::vector<T>& rows) {
  auto schema = ArrowSchema<T>();
  std::unique_ptr<arrow::ArrayBuilder> builder;
  ARROW_RETURN_NOT_OK(arrow::MakeBuilder(arrow::default_memory_pool(), ArrowType<T>(), &builder));
  for (const T& row : rows) ARROW_RETURN_NOT_OK(internal::AppendValue(builder.get(), row));
  ARROW_ASSIGN_OR_RAISE(auto array, builder->Finish());
  const auto& st = static_cast<const arrow::StructArray&>(*array);
  arrow::ArrayVector columns;
  for (int i = 0; i < st.num_fields(); ++i) columns.push_back(st.field(i));
  return arrow::RecordBatch::Make(schema, array->length(), std::move(columns));
}

/// Reads records from a batch; the schema must match T. Errors name `where`, column and row.
template <RecordType T>
arrow::Result<std::vector<T>> FromRecordBatch(const arrow::RecordBatch& batch,
                                              std::string_view where) {
  ARROW_RETURN_NOT_OK(CheckArrowSchema<T>(*batch.schema(), where));
  std::vector<T> rows(static_cast<size_t>(batch.num_rows()));
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    arrow::Status status;
    int i = 0;
    ForEachField<T>([&](auto field) {
      if (status.ok()) {
        status = internal::ReadValue(*batch.column(i), r, std::string(field.name),
                                     &(rows[static_cast<size_t>(r)].*(field.member)));
      }
      ++i;
    });
    if (!status.ok()) return arrow::Status::Invalid(where, ": ", status.message());
  }
  return rows;
}

}  // namespace sluice::schemas
