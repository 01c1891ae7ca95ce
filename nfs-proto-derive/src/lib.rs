//! `#[derive(Xdr)]`: XDR (RFC 4506) encoding, decoding and proptest strategies from one
//! declaration.
//!
//! The protocol crate declares each wire type once as a Rust struct or enum; this derive writes
//! the encoder, the bounded decoder and (under `cfg(any(test, feature = "arbitrary"))`) a
//! `proptest::arbitrary::Arbitrary` implementation, so the three can never drift apart.
//!
//! * A struct encodes its fields in declaration order (XDR `struct`).
//! * A newtype struct encodes as its one field (XDR `typedef`).
//! * An enum is an XDR discriminated `union`. Each variant names its case with
//!   `#[xdr(case = EXPR)]` (any value implementing `nfs_proto::xdr::Discriminant`). A unit variant
//!   is a `void` arm; a variant with fields encodes them in order. One variant may be
//!   `#[xdr(default)]`: its first field holds the discriminant that selected it and an optional
//!   second field holds the arm body.
//!
//! Field attributes: `#[xdr(max = EXPR)]` bounds a variable-length item (checked on decode,
//! before anything is allocated); `#[xdr(payload)]` marks bulk data (READ/WRITE/READLINK) that the
//! encoder keeps as a separate `Bytes` piece instead of copying it.
//! Variant attribute `#[xdr(skip_arbitrary)]` leaves a variant out of generated test values.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Ts;
use quote::{format_ident, quote};
use syn::{parse_macro_input, Data, DeriveInput, Expr, Fields, Type};

/// Derives `nfs_proto::xdr::Xdr` (and proptest's `Arbitrary` in test builds).
#[proc_macro_derive(Xdr, attributes(xdr))]
pub fn derive_xdr(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

#[derive(Default)]
struct FieldAttrs {
    max: Option<Expr>,
    payload: bool,
}

#[derive(Default)]
struct VariantAttrs {
    case: Option<Expr>,
    default: bool,
    skip_arbitrary: bool,
}

fn field_attrs(attrs: &[syn::Attribute]) -> syn::Result<FieldAttrs> {
    let mut out = FieldAttrs::default();
    for a in attrs.iter().filter(|a| a.path().is_ident("xdr")) {
        a.parse_nested_meta(|m| {
            if m.path.is_ident("max") {
                out.max = Some(m.value()?.parse()?);
                Ok(())
            } else if m.path.is_ident("payload") {
                out.payload = true;
                Ok(())
            } else {
                Err(m.error("expected `max = EXPR` or `payload`"))
            }
        })?;
    }
    Ok(out)
}

fn variant_attrs(attrs: &[syn::Attribute]) -> syn::Result<VariantAttrs> {
    let mut out = VariantAttrs::default();
    for a in attrs.iter().filter(|a| a.path().is_ident("xdr")) {
        a.parse_nested_meta(|m| {
            if m.path.is_ident("case") {
                out.case = Some(m.value()?.parse()?);
                Ok(())
            } else if m.path.is_ident("default") {
                out.default = true;
                Ok(())
            } else if m.path.is_ident("skip_arbitrary") {
                out.skip_arbitrary = true;
                Ok(())
            } else {
                Err(m.error("expected `case = EXPR`, `default` or `skip_arbitrary`"))
            }
        })?;
    }
    Ok(out)
}

fn krate() -> Ts {
    quote!(::nfs_proto::xdr)
}

/// The last path segment of a type, e.g. `Bytes` for `bytes::Bytes`, `Vec` for `Vec<T>`.
fn last_ident(ty: &Type) -> Option<String> {
    if let Type::Group(g) = ty {
        return last_ident(&g.elem);
    }
    if let Type::Path(p) = ty {
        p.path.segments.last().map(|s| s.ident.to_string())
    } else {
        None
    }
}

fn vec_elem(ty: &Type) -> Option<&Type> {
    if let Type::Group(g) = ty {
        return vec_elem(&g.elem);
    }
    if let Type::Path(p) = ty {
        let seg = p.path.segments.last()?;
        if seg.ident == "Vec" {
            if let syn::PathArguments::AngleBracketed(a) = &seg.arguments {
                if let Some(syn::GenericArgument::Type(t)) = a.args.first() {
                    return Some(t);
                }
            }
        }
    }
    None
}

/// Encodes one field reached through the expression `access` (a reference).
fn encode_field(access: &Ts, fa: &FieldAttrs) -> Ts {
    let x = krate();
    if fa.payload {
        quote!(#x::Encoder::put_payload(enc, #access);)
    } else {
        quote!(#x::Xdr::encode(#access, enc);)
    }
}

/// Decodes one field, attaching `what` as context to any error.
fn decode_field(ty: &Type, fa: &FieldAttrs, what: &str) -> Ts {
    let x = krate();
    match &fa.max {
        Some(max) => quote!(
            <#ty as #x::XdrBounded>::decode_bounded(dec, (#max) as u32)
                .map_err(|e| e.context(#what))?
        ),
        None => quote!(<#ty as #x::Xdr>::decode(dec).map_err(|e| e.context(#what))?),
    }
}

/// A proptest strategy for one field.
fn arb_field(ty: &Type, fa: &FieldAttrs) -> Ts {
    let cap = match &fa.max {
        Some(m) => quote!(::core::cmp::min((#m) as usize, 24usize)),
        None => quote!(24usize),
    };
    match last_ident(ty).as_deref() {
        Some("Bytes") => quote!(
            ::proptest::collection::vec(::proptest::arbitrary::any::<u8>(), 0..=#cap)
                .prop_map(::bytes::Bytes::from)
        ),
        Some("Utf8String") => quote!(
            ::proptest::collection::vec(::proptest::char::range('a', 'z'), 0..=#cap)
                .prop_map(|v| <#ty>::from(v.into_iter().collect::<::std::string::String>()))
        ),
        Some("Vec") => {
            let elem = vec_elem(ty).expect("Vec<T>");
            let cap = match &fa.max {
                Some(m) => quote!(::core::cmp::min((#m) as usize, 3usize)),
                None => quote!(3usize),
            };
            quote!(::proptest::collection::vec(::proptest::arbitrary::any::<#elem>(), 0..=#cap))
        }
        _ => quote!(::proptest::arbitrary::any::<#ty>()),
    }
}

/// Builds a strategy producing a tuple of all fields, nested in groups of at most 8 so that
/// proptest's tuple impls (which stop at 12) always apply. Returns (strategy, pattern).
fn arb_tuple(strats: &[Ts], names: &[syn::Ident]) -> (Ts, Ts) {
    if strats.len() <= 8 {
        return (quote!((#(#strats,)*)), quote!((#(#names,)*)));
    }
    let mut s_groups = Vec::new();
    let mut p_groups = Vec::new();
    for (s, n) in strats.chunks(8).zip(names.chunks(8)) {
        let (st, pat) = arb_tuple(s, n);
        s_groups.push(st);
        p_groups.push(pat);
    }
    (quote!((#(#s_groups,)*)), quote!((#(#p_groups,)*)))
}

fn expand(input: &DeriveInput) -> syn::Result<Ts> {
    let name = &input.ident;
    let x = krate();
    let (encode, decode, arb) = match &input.data {
        Data::Struct(s) => expand_struct(name, &s.fields)?,
        Data::Enum(e) => expand_enum(name, e)?,
        Data::Union(_) => {
            return Err(syn::Error::new_spanned(
                name,
                "derive(Xdr) supports structs and enums",
            ))
        }
    };
    Ok(quote! {
        impl #x::Xdr for #name {
            fn encode(&self, enc: &mut #x::Encoder) { #encode }
            fn decode(dec: &mut #x::Decoder) -> ::core::result::Result<Self, #x::DecodeError> {
                #decode
            }
        }
        #[cfg(any(test, feature = "arbitrary"))]
        impl ::proptest::arbitrary::Arbitrary for #name {
            type Parameters = ();
            type Strategy = ::proptest::strategy::BoxedStrategy<Self>;
            fn arbitrary_with(_: ()) -> Self::Strategy {
                #[allow(unused_imports)]
                use ::proptest::strategy::Strategy as _;
                #arb
            }
        }
    })
}

fn expand_struct(name: &syn::Ident, fields: &Fields) -> syn::Result<(Ts, Ts, Ts)> {
    let mut enc = Vec::new();
    let mut dec = Vec::new();
    let mut strats = Vec::new();
    let mut binds = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let fa = field_attrs(&f.attrs)?;
        let (access, bind, what) = match &f.ident {
            Some(id) => (quote!(&self.#id), id.clone(), format!("{name}.{id}")),
            None => {
                let idx = syn::Index::from(i);
                (
                    quote!(&self.#idx),
                    format_ident!("f{}", i),
                    format!("{name}.{i}"),
                )
            }
        };
        enc.push(encode_field(&access, &fa));
        let d = decode_field(&f.ty, &fa, &what);
        dec.push(quote!(let #bind = #d;));
        strats.push(arb_field(&f.ty, &fa));
        binds.push(bind);
    }
    let construct = match fields {
        Fields::Named(_) => quote!(#name { #(#binds,)* }),
        Fields::Unnamed(_) => quote!(#name ( #(#binds,)* )),
        Fields::Unit => quote!(#name),
    };
    let (st, pat) = arb_tuple(&strats, &binds);
    let arb = if binds.is_empty() {
        quote!(::proptest::strategy::Just(#name).boxed())
    } else {
        quote!(#st.prop_map(|#pat| #construct).boxed())
    };
    Ok((
        quote!(#(#enc)*),
        quote!(#(#dec)* ::core::result::Result::Ok(#construct)),
        arb,
    ))
}

fn expand_enum(name: &syn::Ident, e: &syn::DataEnum) -> syn::Result<(Ts, Ts, Ts)> {
    let x = krate();
    let mut enc_arms = Vec::new();
    let mut dec_arms = Vec::new();
    let mut cases = Vec::new();
    let mut default_arm = None;
    let mut arb_arms = Vec::new();
    for v in &e.variants {
        let va = variant_attrs(&v.attrs)?;
        let vname = &v.ident;
        let what = format!("{name}::{vname}");
        let mut fas = Vec::new();
        for f in v.fields.iter() {
            fas.push(field_attrs(&f.attrs)?);
        }
        let binds: Vec<syn::Ident> = v
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| f.ident.clone().unwrap_or_else(|| format_ident!("f{}", i)))
            .collect();
        let pattern = match &v.fields {
            Fields::Named(_) => quote!(#name::#vname { #(#binds,)* }),
            Fields::Unnamed(_) => quote!(#name::#vname ( #(#binds,)* )),
            Fields::Unit => quote!(#name::#vname),
        };
        let strats: Vec<Ts> = v
            .fields
            .iter()
            .zip(&fas)
            .map(|(f, fa)| arb_field(&f.ty, fa))
            .collect();
        if va.default {
            if v.fields.is_empty() || v.fields.len() > 2 {
                return Err(syn::Error::new_spanned(
                    vname,
                    "a default arm holds the discriminant and at most one body field",
                ));
            }
            let d = &binds[0];
            let dty = &v.fields.iter().next().unwrap().ty;
            let mut enc = quote!(#x::Discriminant::encode_disc(#d, enc););
            let mut dec = quote!(let #d = <#dty as #x::Discriminant>::from_u32(disc););
            if v.fields.len() == 2 {
                let b = &binds[1];
                let f = v.fields.iter().nth(1).unwrap();
                enc.extend(encode_field(&quote!(#b), &fas[1]));
                let df = decode_field(&f.ty, &fas[1], &what);
                dec.extend(quote!(let #b = #df;));
            }
            enc_arms.push(quote!(#pattern => { #enc }));
            default_arm = Some(quote!({ #dec ::core::result::Result::Ok(#pattern) }));
            if !va.skip_arbitrary {
                // The default arm must never carry a discriminant that a listed case owns.
                let (st, pat) = arb_tuple(&strats, &binds);
                arb_arms.push(quote!(
                    #st.prop_filter("discriminant owned by a listed case", move |#pat| {
                        let _ = (#(&#binds,)*);
                        let v = #x::Discriminant::to_u32(#d);
                        !__cases.contains(&v)
                    })
                    .prop_map(|#pat| #pattern)
                    .boxed()
                ));
            }
            continue;
        }
        let case = va.case.ok_or_else(|| {
            syn::Error::new_spanned(
                vname,
                "union arm needs #[xdr(case = EXPR)] or #[xdr(default)]",
            )
        })?;
        let mut enc = quote!(#x::Discriminant::encode_disc(&(#case), enc););
        let mut dec = Vec::new();
        for ((f, fa), b) in v.fields.iter().zip(&fas).zip(&binds) {
            enc.extend(encode_field(&quote!(#b), fa));
            let df = decode_field(&f.ty, fa, &what);
            dec.push(quote!(let #b = #df;));
        }
        enc_arms.push(quote!(#pattern => { #enc }));
        dec_arms.push(quote!(
            if disc == #x::Discriminant::to_u32(&(#case)) {
                #(#dec)*
                return ::core::result::Result::Ok(#pattern);
            }
        ));
        cases.push(quote!(#x::Discriminant::to_u32(&(#case))));
        if !va.skip_arbitrary {
            if binds.is_empty() {
                arb_arms.push(quote!(::proptest::strategy::Just(#pattern).boxed()));
            } else {
                let (st, pat) = arb_tuple(&strats, &binds);
                arb_arms.push(quote!(#st.prop_map(|#pat| #pattern).boxed()));
            }
        }
    }
    let n = cases.len();
    let fallback = default_arm.unwrap_or_else(|| {
        quote!(::core::result::Result::Err(#x::DecodeError::bad_discriminant(disc, start)
            .context(stringify!(#name))))
    });
    let decode = quote!({
        let start = dec.position();
        let disc = dec.get_u32().map_err(|e| e.context(stringify!(#name)))?;
        #(#dec_arms)*
        #fallback
    });
    let arb = quote!({
        let __cases: [u32; #n] = [#(#cases,)*];
        let _ = &__cases;
        ::proptest::strategy::Union::new(::std::vec![#(#arb_arms,)*]).boxed()
    });
    let encode = quote!(match self { #(#enc_arms)* });
    Ok((encode, decode, arb))
}
