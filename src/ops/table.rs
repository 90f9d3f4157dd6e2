//! The op table as data: one line per op, `SPELLINGS ; WHERE ; PARAMS ; RULE ; CLASS`.
//!
//! - SPELLINGS: the names (aliases share the entry; the first is the aten name).
//! - WHERE: `m` a Tensor method, `t` a `torch.` function, `F` a
//!   `torch.nn.functional` function (`torch.ops.aten.NAME` reaches every entry).
//! - PARAMS: PyTorch's parameters in order, `*` before keyword-only ones;
//!   `TYPE name[=default]`. Types: `T` tensor, `T?`, `TS` tensor or number,
//!   `N` number, `I` int, `I?`, `L` int list (varargs allowed when first),
//!   `L?`, `DI?` dim(s), `B` bool, `F?` float, `D?` dtype, `M?` memory format,
//!   `TL` tensor list, `S?` string, `A` anything.
//! - RULE: the shape/stride/dtype rule family implemented in
//!   `analysis/apply.rs`.
//! - CLASS: the aten schema's alias class: `view` (`Tensor(a)`), `multi`
//!   (`Tensor(a)[]`), `view_or_copy`, `inplace` (`Tensor(a!)`, data), `meta`
//!   (in-place view op), `storage`, `autograd`, `creation`, `functional`.
//!
//! An in-place variant `NAME_` of a functional entry with class `functional`
//! and a `_` flag in CLASS (`functional_`) is derived automatically.

pub const TABLE: &str = r#"
view ; m ; T self, L? size=None, * , D? dtype=None ; view ; view
view_as ; m ; T self, T other ; view_as ; view
as_strided ; mt ; T self, L size, L stride, I? storage_offset=None ; as_strided ; view
expand ; m ; T self, L size, * , B implicit=False ; expand ; view
expand_as ; m ; T self, T other ; expand_as ; view
broadcast_to ; mt ; T self, L size ; expand ; view
transpose swapdims ; mt ; T self, I dim0, I dim1 ; transpose ; view
swapaxes ; mt ; T self, I axis0, I axis1 ; transpose ; view
t ; mt ; T self ; t ; view
permute ; mt ; T self, L dims ; permute ; view
movedim moveaxis ; mt ; T self, A source, A destination ; movedim ; view
squeeze ; mt ; T self, DI? dim=None ; squeeze ; view
unsqueeze ; mt ; T self, I dim ; unsqueeze ; view
flatten ; mt ; T self, I start_dim=0, I end_dim=-1 ; flatten ; view_or_copy
unflatten ; mt ; T self, I dim, L sizes ; unflatten ; view
narrow ; mt ; T self, I dim, A start, I length ; narrow ; view
select ; mt ; T self, I dim, I index ; select ; view
slice ; m ; T self, I dim=0, I? start=None, I? end=None, I step=1 ; slice ; view
diagonal ; mt ; T self, I offset=0, I dim1=0, I dim2=1 ; diagonal ; view
unfold ; m ; T self, I dimension, I size, I step ; unfold ; view
detach ; mt ; T self ; detach ; view
alias ; t ; T self ; alias ; view
real ; t ; T self ; real ; view
imag ; t ; T self ; imag ; view
view_as_real ; t ; T self ; view_as_real ; view
view_as_complex ; t ; T self ; view_as_complex ; view
unbind ; mt ; T self, I dim=0 ; unbind ; multi
split ; mt ; T self, A split_size_or_sections, I dim=0 ; split ; multi
split_with_sizes ; mt ; T self, L split_sizes, I dim=0 ; split_with_sizes ; multi
chunk ; mt ; T self, I chunks, I dim=0 ; chunk ; multi
tensor_split ; mt ; T self, A indices_or_sections, I dim=0 ; tensor_split ; multi
reshape ; mt ; T self, L shape ; reshape ; view_or_copy
reshape_as ; m ; T self, T other ; reshape_as ; view_or_copy
contiguous ; m ; T self, * , M? memory_format=contiguous_format ; contiguous ; view_or_copy
to ; m ; T self, A a=None, A b=None, A c=None, A d=None, * , D? dtype=None, B non_blocking=False, B copy=False, M? memory_format=None, A device=None ; to ; view_or_copy
type_as ; m ; T self, T other ; type_as ; view_or_copy
float ; m ; T self, * , M? memory_format=None ; cast_float32 ; view_or_copy
double ; m ; T self, * , M? memory_format=None ; cast_float64 ; view_or_copy
half ; m ; T self, * , M? memory_format=None ; cast_float16 ; view_or_copy
bfloat16 ; m ; T self, * , M? memory_format=None ; cast_bfloat16 ; view_or_copy
long ; m ; T self, * , M? memory_format=None ; cast_int64 ; view_or_copy
int ; m ; T self, * , M? memory_format=None ; cast_int32 ; view_or_copy
short ; m ; T self, * , M? memory_format=None ; cast_int16 ; view_or_copy
bool ; m ; T self, * , M? memory_format=None ; cast_bool ; view_or_copy
cpu ; m ; T self ; identity ; view_or_copy
add ; mt ; TS self, TS other, * , N alpha=1 ; binary ; functional_
sub subtract ; mt ; TS self, TS other, * , N alpha=1 ; binary ; functional_
rsub ; t ; TS self, TS other, * , N alpha=1 ; binary ; functional
mul multiply ; mt ; TS self, TS other ; binary ; functional_
div divide ; mt ; TS self, TS other, * , S? rounding_mode=None ; div ; functional_
true_divide ; mt ; TS self, TS other ; binary_float ; functional_
floor_divide ; mt ; TS self, TS other ; binary ; functional_
remainder ; mt ; TS self, TS other ; binary ; functional_
fmod ; mt ; T self, TS other ; binary ; functional_
pow ; mt ; TS self, TS exponent ; binary ; functional_
maximum ; mt ; T self, T other ; binary ; functional
minimum ; mt ; T self, T other ; binary ; functional
atan2 ; mt ; T self, T other ; binary_float ; functional_
bitwise_and __and__ ; mt ; TS self, TS other ; binary_int ; functional_
bitwise_or __or__ ; mt ; TS self, TS other ; binary_int ; functional_
bitwise_xor __xor__ ; mt ; TS self, TS other ; binary_int ; functional_
bitwise_left_shift __lshift__ ; mt ; TS self, TS other ; binary_int ; functional_
bitwise_right_shift __rshift__ ; mt ; TS self, TS other ; binary_int ; functional_
__ilshift__ ; m ; T self, TS other ; binary_int ; inplace
__irshift__ ; m ; T self, TS other ; binary_int ; inplace
eq ; mt ; T self, TS other ; compare ; functional_
ne not_equal ; mt ; T self, TS other ; compare ; functional_
lt less ; mt ; T self, TS other ; compare ; functional_
le less_equal ; mt ; T self, TS other ; compare ; functional_
gt greater ; mt ; T self, TS other ; compare ; functional_
ge greater_equal ; mt ; T self, TS other ; compare ; functional_
logical_and ; mt ; T self, T other ; compare ; functional_
logical_or ; mt ; T self, T other ; compare ; functional_
logical_xor ; mt ; T self, T other ; compare ; functional_
logical_not ; mt ; T self ; unary_bool ; functional_
isnan ; mt ; T self ; unary_bool ; functional
isfinite ; mt ; T self ; unary_bool ; functional
isinf ; mt ; T self ; unary_bool ; functional
bitwise_not ; mt ; T self ; unary_int ; functional_
neg negative ; mt ; T self ; unary ; functional_
abs absolute ; mt ; T self ; unary ; functional_
relu ; mtF ; T self, B inplace=False ; unary ; functional_
floor ; mt ; T self ; unary ; functional_
ceil ; mt ; T self ; unary ; functional_
round ; mt ; T self, * , I? decimals=None ; unary ; functional_
trunc fix ; mt ; T self ; unary ; functional_
sign ; mt ; T self ; unary ; functional_
square ; mt ; T self ; unary ; functional_
exp ; mt ; T self ; unary_float ; functional_
exp2 ; mt ; T self ; unary_float ; functional_
expm1 ; mt ; T self ; unary_float ; functional_
log ; mt ; T self ; unary_float ; functional_
log2 ; mt ; T self ; unary_float ; functional_
log10 ; mt ; T self ; unary_float ; functional_
log1p ; mt ; T self ; unary_float ; functional_
sqrt ; mt ; T self ; unary_float ; functional_
rsqrt ; mt ; T self ; unary_float ; functional_
sin ; mt ; T self ; unary_float ; functional_
cos ; mt ; T self ; unary_float ; functional_
tan ; mt ; T self ; unary_float ; functional_
asin ; mt ; T self ; unary_float ; functional_
acos ; mt ; T self ; unary_float ; functional_
atan ; mt ; T self ; unary_float ; functional_
sinh ; mt ; T self ; unary_float ; functional_
cosh ; mt ; T self ; unary_float ; functional_
tanh ; mtF ; T self ; unary_float ; functional_
sigmoid ; mtF ; T self ; unary_float ; functional_
erf ; mt ; T self ; unary_float ; functional_
reciprocal ; mt ; T self ; unary_float ; functional_
gelu ; F ; T self, * , S? approximate=none ; unary_float ; functional
silu ; F ; T self, B inplace=False ; unary_float ; functional
mish ; F ; T self, B inplace=False ; unary_float ; functional
softplus ; F ; T self, N beta=1, N threshold=20 ; unary_float ; functional
elu ; F ; T self, N alpha=1.0, B inplace=False ; unary_float ; functional
selu ; F ; T self, B inplace=False ; unary_float ; functional
leaky_relu ; F ; T self, N negative_slope=0.01, B inplace=False ; unary_float ; functional
hardtanh ; F ; T self, N min_val=-1.0, N max_val=1.0, B inplace=False ; unary ; functional
relu6 ; F ; T self, B inplace=False ; unary ; functional
hardsigmoid ; F ; T self, B inplace=False ; unary_float ; functional
hardswish ; F ; T self, B inplace=False ; unary_float ; functional
logsigmoid ; F ; T self ; unary_float ; functional
clamp clip ; mt ; T self, TS? min=None, TS? max=None ; clamp ; functional_
clamp_min ; mt ; T self, TS min ; clamp ; functional_
clamp_max ; mt ; T self, TS max ; clamp ; functional_
lerp ; mt ; T self, T end, TS weight ; lerp ; functional_
where ; mt ; T condition, TS self, TS other ; where ; functional
masked_fill ; mt ; T self, T mask, TS value ; masked_fill ; functional_
addcmul ; mt ; T self, T tensor1, T tensor2, * , N value=1 ; addc ; functional_
addcdiv ; mt ; T self, T tensor1, T tensor2, * , N value=1 ; addc ; functional_
zero_ ; mt ; T self ; fill ; inplace
fill_ ; mt ; T self, TS value ; fill ; inplace
copy_ ; m ; T self, T src, B non_blocking=False ; copy ; inplace
normal_ ; m ; T self, N mean=0, N std=1 ; fill ; inplace
uniform_ ; m ; T self, N from=0, N to=1 ; fill ; inplace
bernoulli_ ; m ; T self, TS p=0.5 ; fill ; inplace
random_ ; m ; T self, A a=None, A b=None ; fill ; inplace
exponential_ ; m ; T self, N lambd=1 ; fill ; inplace
index_add_ ; m ; T self, I dim, T index, T source, * , N alpha=1 ; index_add ; inplace
index_add ; mt ; T self, I dim, T index, T source, * , N alpha=1 ; index_add ; functional
index_copy_ ; m ; T self, I dim, T index, T source ; index_add ; inplace
index_copy ; mt ; T self, I dim, T index, T source ; index_add ; functional
index_fill_ ; m ; T self, I dim, T index, TS value ; index_fill ; inplace
index_fill ; mt ; T self, I dim, T index, TS value ; index_fill ; functional
index_put_ ; mt ; T self, A indices, T values, B accumulate=False ; index_put ; inplace
index_put ; mt ; T self, A indices, T values, B accumulate=False ; index_put ; functional
scatter ; mt ; T self, I dim, T index, TS src=None, * , TS value=None, S? reduce=None ; scatter ; functional_
scatter_add ; mt ; T self, I dim, T index, T src ; scatter ; functional_
addmm ; mt ; T self, T mat1, T mat2, * , N beta=1, N alpha=1 ; addmm ; functional_
baddbmm ; mt ; T self, T batch1, T batch2, * , N beta=1, N alpha=1 ; baddbmm ; functional_
transpose_ ; m ; T self, I dim0, I dim1 ; transpose ; meta
swapdims_ ; m ; T self, I dim0, I dim1 ; transpose ; meta
swapaxes_ ; m ; T self, I axis0, I axis1 ; transpose ; meta
t_ ; m ; T self ; t ; meta
squeeze_ ; m ; T self, DI? dim=None ; squeeze ; meta
unsqueeze_ ; m ; T self, I dim ; unsqueeze ; meta
as_strided_ ; mt ; T self, L size, L stride, I? storage_offset=None ; as_strided ; meta
resize_ ; m ; T self, L size, * , M? memory_format=None ; resize ; meta
resize_as_ ; mt ; T self, T the_template, * , M? memory_format=None ; resize_as ; meta
detach_ ; mt ; T self ; detach_ ; autograd
set_ ; m ; T self, T source ; set ; storage
resize_storage_bytes_ ; i ; T self, I nbytes ; resize_storage ; storage
requires_grad_ ; m ; T self, B requires_grad=True ; requires_grad_ ; autograd
sum ; mt ; T self, DI? dim=None, B keepdim=False, * , D? dtype=None ; sum ; functional
nansum ; mt ; T self, DI? dim=None, B keepdim=False, * , D? dtype=None ; sum ; functional
mean ; mt ; T self, DI? dim=None, B keepdim=False, * , D? dtype=None ; mean ; functional
nanmean ; mt ; T self, DI? dim=None, B keepdim=False, * , D? dtype=None ; mean ; functional
prod ; mt ; T self, I? dim=None, B keepdim=False, * , D? dtype=None ; sum ; functional
amax ; mt ; T self, DI? dim=None, B keepdim=False ; amax ; functional
amin ; mt ; T self, DI? dim=None, B keepdim=False ; amax ; functional
max ; mt ; T self, A dim=None, B keepdim=False ; max ; functional
min ; mt ; T self, A dim=None, B keepdim=False ; max ; functional
argmax ; mt ; T self, I? dim=None, B keepdim=False ; argmax ; functional
argmin ; mt ; T self, I? dim=None, B keepdim=False ; argmax ; functional
std ; mt ; T self, DI? dim=None, A unbiased=None, B keepdim=False, * , N? correction=None ; mean ; functional
var ; mt ; T self, DI? dim=None, A unbiased=None, B keepdim=False, * , N? correction=None ; mean ; functional
norm ; mt ; T self, A p=fro, DI? dim=None, B keepdim=False, * , D? dtype=None ; norm ; functional
logsumexp ; mt ; T self, DI dim, B keepdim=False ; mean ; functional
all ; mt ; T self, DI? dim=None, B keepdim=False ; all ; functional
any ; mt ; T self, DI? dim=None, B keepdim=False ; all ; functional
cumsum ; mt ; T self, I dim, * , D? dtype=None ; cumsum ; functional_
cumprod ; mt ; T self, I dim, * , D? dtype=None ; cumsum ; functional_
softmax ; mtF ; T self, I? dim=None, D? dtype=None ; softmax ; functional
log_softmax ; mtF ; T self, I? dim=None, D? dtype=None ; softmax ; functional
sort ; mt ; T self, I dim=-1, B descending=False, * , B stable=False ; sort ; functional
argsort ; mt ; T self, I dim=-1, B descending=False, * , B stable=False ; argsort ; functional
topk ; mt ; T self, I k, I dim=-1, B largest=True, B sorted=True ; topk ; functional
matmul ; mt ; T self, T other ; matmul ; functional
mm ; mt ; T self, T mat2 ; mm ; functional
bmm ; mt ; T self, T mat2 ; bmm ; functional
mv ; mt ; T self, T vec ; mv ; functional
dot ; mt ; T self, T tensor ; dot ; functional
outer ger ; mt ; T self, T vec2 ; outer ; functional
einsum ; t ; A equation, A operands ; einsum ; functional
linear ; F ; T input, T weight, T? bias=None ; linear ; functional
clone ; mt ; T self, * , M? memory_format=preserve_format ; clone ; functional
cat concat concatenate ; t ; TL tensors, I dim=0 ; cat ; functional
stack ; t ; TL tensors, I dim=0 ; stack ; functional
repeat ; m ; T self, L repeats ; repeat ; functional
tile ; mt ; T self, L dims ; tile ; functional
repeat_interleave ; mt ; T self, A repeats=None, I? dim=None, * , I? output_size=None ; repeat_interleave ; functional
flip ; mt ; T self, L dims ; same_shape ; functional
roll ; mt ; T self, A shifts, A dims=None ; same_shape ; functional
index_select ; mt ; T self, I dim, T index ; index_select ; functional
gather ; mt ; T self, I dim, T index, * , B sparse_grad=False ; gather ; functional
take ; mt ; T self, T index ; take ; functional
masked_select ; mt ; T self, T mask ; data_dependent ; functional
nonzero ; mt ; T self ; data_dependent ; functional
tril ; mt ; T self, I diagonal=0 ; tril ; functional_
triu ; mt ; T self, I diagonal=0 ; tril ; functional_
pad ; F ; T input, L pad, S? mode=constant, N? value=None ; pad ; functional
dropout ; tF ; T input, N p=0.5, B training=True, B inplace=False ; dropout ; functional
layer_norm ; tF ; T input, L normalized_shape, T? weight=None, T? bias=None, N eps=1e-05 ; layer_norm ; functional
embedding ; F ; T input, T weight, I? padding_idx=None, N? max_norm=None, N norm_type=2.0, B scale_grad_by_freq=False, B sparse=False ; embedding ; functional
conv2d ; tF ; T input, T weight, T? bias=None, A stride=1, A padding=0, A dilation=1, I groups=1 ; conv2d ; functional
zeros ; t ; L size, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False, M? memory_format=None ; full_0 ; creation
ones ; t ; L size, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False, M? memory_format=None ; full_1 ; creation
empty ; t ; L size, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False, M? memory_format=None ; full_0 ; creation
rand ; t ; L size, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False ; full_0 ; creation
randn ; t ; L size, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False ; full_0 ; creation
full ; t ; L size, TS fill_value, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False ; full ; creation
randint ; t ; A low=None, A high=None, A size=None, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False ; randint ; creation
arange ; t ; A start=None, A end=None, A step=None, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False ; arange ; creation
linspace ; t ; N start, N end, I steps, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False ; linspace ; creation
eye ; t ; I n, I? m=None, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False ; eye ; creation
tensor ; t ; A data, * , D? dtype=None, A device=None, B requires_grad=False ; tensor ; creation
zeros_like ; t ; T self, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False, M? memory_format=preserve_format ; like ; creation
ones_like ; t ; T self, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False, M? memory_format=preserve_format ; like ; creation
empty_like ; t ; T self, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False, M? memory_format=preserve_format ; like ; creation
rand_like ; t ; T self, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False, M? memory_format=preserve_format ; like ; creation
randn_like ; t ; T self, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False, M? memory_format=preserve_format ; like ; creation
randint_like ; t ; T self, A low=None, A high=None, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False, M? memory_format=preserve_format ; like ; creation
full_like ; t ; T self, TS fill_value, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False, M? memory_format=preserve_format ; like ; creation
new_zeros ; m ; T self, L size, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False ; new ; creation
new_ones ; m ; T self, L size, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False ; new ; creation
new_empty ; m ; T self, L size, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False ; new ; creation
new_full ; m ; T self, L size, TS fill_value, * , D? dtype=None, A layout=None, A device=None, B requires_grad=False ; new ; creation
"#;
